"""The typed configuration of ``python -m search.finalize`` (and of the finalize step of ``search.run``, which
passes its plan's :class:`~search.study.plan.Resources` as they are: the final runs get the search's slots)."""

from __future__ import annotations

from dataclasses import dataclass

from search.answer.stats import MIN_PAIRS, margin_gain
from search.study.config import SearchConfig
from search.study.plan import Resources
from spaces import get_study
from trainables.config import ConfigError

# ``python -m search.finalize``'s own: 2 final runs at once on a private local Ray (its flags change them)
FINAL_RESOURCES = Resources(1.0, 0.0, 2, SearchConfig.max_failures, None, None)


@dataclass(frozen=True)
class FinalizeConfig:
    study: str
    name: str | None = None  # the study invocation (Tune experiment name); None: the latest
    seeds: int = 5  # K fresh seeds per side, numbered after the search's
    tracking_uri: str = "sqlite:///mlflow.db"
    out_dir: str = "results"
    resources: Resources = FINAL_RESOURCES  # a final run's CPUs and GPUs, runs at once, retries, the Ray cluster
    register: bool = True
    max_seeds: int | None = None  # the spending plan's planned most seeds (None: the study's, or 2K >= 10)
    expected_s: float | None = None  # the final runs' seconds as forecast (search.study.forecast); None: none
    margin: float | None = None  # the gain worth having "no significant difference" rules out (None: detectable)
    until_decided: bool = False  # more looks while claim (a) is undecided, up to max_seeds (final.finalize_study)

    def __post_init__(self) -> None:
        get_study(self.study)
        if self.seeds < MIN_PAIRS:
            raise ConfigError(f"--seeds {self.seeds}: expected >= {MIN_PAIRS} (fewer seeds can give no verdict)")
        if self.max_seeds is not None and self.max_seeds < self.seeds:
            raise ConfigError(f"--max-seeds {self.max_seeds}: expected >= --seeds {self.seeds}")
        if self.margin is not None:
            margin_gain(str(self.margin))
        res = self.resources
        if res.cpus_per_trial <= 0 or res.gpus_per_trial < 0 or res.max_concurrent < 1:
            raise ConfigError("--cpus-per-trial > 0, --gpus-per-trial >= 0 and --max-concurrent >= 1 expected")
