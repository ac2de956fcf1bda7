"""The typed configuration of ``python -m search.finalize`` (and of the finalize step of ``search.run``)."""

from __future__ import annotations

from dataclasses import dataclass

from search.answer.stats import MIN_PAIRS
from spaces import get_study
from trainables.config import ConfigError


@dataclass(frozen=True)
class FinalizeConfig:
    study: str
    name: str | None = None  # the study invocation (Tune experiment name); None: the latest
    seeds: int = 5  # K fresh seeds per side, numbered after the search's
    tracking_uri: str = "sqlite:///mlflow.db"
    out_dir: str = "results"
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    max_concurrent: int = 2
    address: str | None = None
    register: bool = True
    max_seeds: int | None = None  # the spending plan's planned most seeds (None: the study's, or 2K >= 10)

    def __post_init__(self) -> None:
        get_study(self.study)
        if self.seeds < MIN_PAIRS:
            raise ConfigError(f"--seeds {self.seeds}: expected >= {MIN_PAIRS} (fewer seeds can give no verdict)")
        if self.max_seeds is not None and self.max_seeds < self.seeds:
            raise ConfigError(f"--max-seeds {self.max_seeds}: expected >= --seeds {self.seeds}")
        if self.cpus_per_trial <= 0 or self.gpus_per_trial < 0 or self.max_concurrent < 1:
            raise ConfigError("--cpus-per-trial > 0, --gpus-per-trial >= 0 and --max-concurrent >= 1 expected")
