"""The typed configuration of one study invocation (what ``search.run`` parses into)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from search.study.strategy import STRATEGIES
from search.tracking.records import Invocation
from spaces import Preset, Range, Study, get_study
from trainables.cli import mask_credentials
from trainables.config import PRECISIONS, ConfigError, EncoderConfig, SamplingConfig, TrainConfig
from trainables.tasks.base import PROTOCOLS

SEARCHES = tuple(STRATEGIES)  # search.study.strategy: what each --search does


@dataclass(frozen=True)
class SearchConfig:
    study: str
    preset: str | None = None  # None: full where the cluster has GPUs, else smoke (search.study.prepare.resolve_preset)
    trials: int | None = None  # None: the preset's
    seeds: int | None = None  # number of seeds; None: the preset's
    max_concurrent: int = 2
    gpus_per_trial: float = 0.0
    cpus_per_trial: float = 1.0
    metric: str | None = None  # primary-task metric name or full result key; None: the study's
    mode: str | None = None
    tracking_uri: str = "sqlite:///mlflow.db"
    storage: str = "ray_results"
    optuna_storage: str = "sqlite:///optuna.db"
    resume: bool = False
    name: str | None = None
    address: str | None = None
    search: str = "cells"  # search.study.strategy; measured against the rest in docs/search-strategies.md
    model: str | None = None
    epochs: int | None = None
    grace_period: int | None = None
    reduction_factor: int | None = None
    max_failures: int = 2
    auxiliary: tuple[str, ...] | None = None  # restrict the study's candidates
    data_dir: str | None = None
    protocol: str = PROTOCOLS[0]  # holdout
    search_seed: int = 0
    report: bool = True
    finalize: bool = True  # the final test comparison of winner and baseline (search.finalize)
    final_seeds: int | None = None  # seeds of that comparison; None: the preset's
    # overrides of the study's ranges: (low, high)
    exponent_range: tuple[float, float] | None = None
    anneal_range: tuple[float, float] | None = None
    lr_range: tuple[float, float] | None = None
    warmup_range: tuple[float, float] | None = None
    precision: str | None = None  # None: the preset's
    tracking_grace: float = 600.0  # seconds the tracking server may be unreachable before the study stops, resumable
    simulate: str | None = None  # a truth file (absolute path): simulated trials, no torch, no data
    # seeds as a fidelity: seeds of a trial's first ASHA rung, times the reduction factor per rung
    # passed (trainables.fidelity); None: every trial trains every seed
    first_rung_seeds: int | None = None

    def __post_init__(self) -> None:
        study = get_study(self.study)  # raises on an unknown study
        if self.preset is not None:
            study.preset(self.preset)
        if self.final_seeds is not None and self.final_seeds < 3:  # search.answer.stats.MIN_PAIRS, a room above
            raise ConfigError(f"--final-seeds {self.final_seeds}: expected >= 3 (fewer seeds can give no verdict)")
        if self.search not in SEARCHES:
            raise ConfigError(f"--search {self.search!r}: expected one of {', '.join(SEARCHES)}")
        for flag, value in (
            ("--trials", self.trials),
            ("--seeds", self.seeds),
            ("--epochs", self.epochs),
            ("--max-concurrent", self.max_concurrent),
            ("--grace-period", self.grace_period),
        ):
            if value is not None and value < 1:
                raise ConfigError(f"{flag} {value}: expected >= 1")
        if self.reduction_factor is not None and self.reduction_factor < 2:
            raise ConfigError(f"--reduction-factor {self.reduction_factor}: expected >= 2")
        if self.gpus_per_trial < 0 or self.cpus_per_trial <= 0:
            raise ConfigError(
                f"--gpus-per-trial {self.gpus_per_trial} / --cpus-per-trial {self.cpus_per_trial}: "
                "expected GPUs >= 0 and CPUs > 0"
            )
        if self.gpus_per_trial > 1 and self.gpus_per_trial != int(self.gpus_per_trial):
            raise ConfigError(f"--gpus-per-trial {self.gpus_per_trial}: fractions only below 1")
        if self.mode is not None and self.mode not in ("max", "min"):
            raise ConfigError(f"--mode {self.mode!r}: expected max or min")
        if self.auxiliary is not None:
            if not self.auxiliary:
                raise ConfigError(f"--auxiliary is empty: study {self.study} needs at least one auxiliary task")
            if study.primary in self.auxiliary or study.primary_name in self.auxiliary:
                raise ConfigError(f"--auxiliary lists the primary task {study.primary!r}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"--protocol {self.protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if not self.tracking_grace >= 0:
            raise ConfigError(f"--tracking-grace {self.tracking_grace}: expected seconds >= 0")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ConfigError(f"--precision {self.precision!r}: expected one of {', '.join(PRECISIONS)}")

        self.resolved_study()  # validates the ranges
        self.check_first_rung_seeds()
        if self.simulate is not None:
            self.truth()  # a bad truth file fails here, before Ray

    def first_rung(self) -> int | None:
        """Seeds of a trial's first rung: ``--first-rung-seeds``, else the chosen preset's; None: all."""
        if self.first_rung_seeds is not None or self.preset is None:
            return self.first_rung_seeds
        return self.resolved_preset().first_rung_seeds

    def check_first_rung_seeds(self) -> None:
        """1 <= N <= K once K is known (``--seeds`` or a chosen preset), on a seed-mean objective."""
        n = self.first_rung()
        if n is None:
            return
        source = "--first-rung-seeds" if self.first_rung_seeds is not None else f"preset {self.preset} first_rung_seeds"
        if self.seeds is not None or self.preset is not None:
            k = len(self.seed_list())
            if not 1 <= n <= k:
                raise ConfigError(f"{source} {n}: expected 1 to {k} (the seeds every trial trains)")
        elif n < 1:
            raise ConfigError(f"--first-rung-seeds {n}: expected >= 1")
        if not self.objective().endswith("/mean"):
            raise ConfigError(f"{source}: the objective {self.objective()} is no seed mean to pair")

    def seed_schedule(self, grace_period: int, reduction_factor: int, max_t: int):
        """The study's seed schedule on ASHA's rungs; None without ``--first-rung-seeds`` (or the preset's)."""
        from trainables.fidelity import SeedSchedule, asha_rungs

        first = self.first_rung()
        if first is None:
            return None
        rungs = asha_rungs(grace_period, reduction_factor, max_t)
        return SeedSchedule(len(self.seed_list()), first, rungs, reduction_factor)

    def truth(self):
        """The truth of a simulated study (``--simulate``), checked against the study's primary."""
        from search.simulation.truth import load_truth

        truth = load_truth(self.simulate or "")
        primary = self.resolved_study().primary_name
        if truth.primary != primary:
            raise ConfigError(
                f"--simulate {self.simulate}: its primary is {truth.primary!r}, study {self.study}'s {primary!r}"
            )
        return truth

    def simulated_cpus(self) -> int | None:
        """A simulated study's local Ray: enough logical CPUs for every slot (its trials only sleep)."""
        if self.simulate is None:
            return None
        return max(os.cpu_count() or 1, math.ceil(self.max_concurrent * self.cpus_per_trial))

    def resolved_study(self) -> Study:
        """The study with this invocation's candidates and ranges (validated on construction)."""
        study = get_study(self.study)
        changes: dict = {}
        if self.preset is not None and study.preset(self.preset).primary:
            changes["primary"] = study.preset(self.preset).primary
        if self.auxiliary is not None:
            changes["candidates"] = self.auxiliary
        if self.preset is not None and study.lr is not None and study.preset(self.preset).lr_range is not None:
            changes["lr"] = study.preset(self.preset).lr_range  # --lr-range, below, still wins
        for field, value in (
            ("exponent", self.exponent_range),
            ("anneal_c", self.anneal_range),
            ("lr", self.lr_range),
            ("warmup", self.warmup_range),
        ):
            if value is not None:
                changes[field] = Range(value[0], value[1], log=field == "lr")
        return replace(study, **changes) if changes else study

    def objective(self) -> str:
        study = self.resolved_study()
        if self.metric is None:
            return study.objective
        if "/" in self.metric:
            return self.metric if self.metric.endswith(("/mean", "/std")) else f"{self.metric}/mean"
        return f"{study.primary_name}/dev/{self.metric}/mean"

    def data_root(self) -> str:
        return self.data_dir or os.environ.get("MTL_DATA_DIR", "data")

    def resolved_preset(self) -> Preset:
        if self.preset is None:
            raise ConfigError(
                f"study {self.study}: no preset chosen yet (search.study.prepare.resolve_preset picks one)"
            )
        return self.resolved_study().preset(self.preset)

    def seed_list(self) -> list[int]:
        """The seeds every trial trains: 1..--seeds, else the preset's."""
        return list(self.resolved_preset().seeds) if self.seeds is None else list(range(1, self.seeds + 1))

    def base_config(self) -> TrainConfig:
        """Everything a trial's TrainConfig shares: the preset's scale plus command-line overrides."""
        study, preset = self.resolved_study(), self.resolved_preset()
        return TrainConfig(
            tasks=(study.primary,),
            primary=study.primary,
            sampling=SamplingConfig(),
            encoder=EncoderConfig(model=self.model or preset.model, max_seq_length=preset.max_seq_length),
            epochs=self.epochs or preset.epochs,
            batch_size=preset.batch_size,
            seed=0,
            lr=preset.lr or TrainConfig.lr,
            max_train_examples=preset.max_train_examples,
            max_eval_examples=preset.max_eval_examples,
            max_auxiliary_eval_examples=preset.max_auxiliary_eval_examples,
            protocol=self.protocol,
            data_dir=str(Path(self.data_root()).resolve()),
            precision=self.precision or preset.precision,
            evaluate_test=False,  # nothing in the search may look at test; finalize's runs score it on fresh seeds
        )

    def invocation(self, tune_path: str, trials: int) -> Invocation:
        """What this invocation starts, as recorded in the study's parent run."""
        base, study = self.base_config(), self.resolved_study()  # base_config() raises while no preset is chosen
        return Invocation(
            study=self.study,
            preset=str(self.preset),
            search=self.search,
            trials=trials,
            seeds=tuple(self.seed_list()),
            objective=self.objective(),
            mode=self.mode or study.mode,
            model=base.encoder.model,
            epochs=base.epochs,
            candidates=tuple(study.candidates),
            protocol=base.protocol,
            tune_path=mask_credentials(tune_path),
            optuna_storage=mask_credentials(self.optuna_storage),
            gpus_per_trial=self.gpus_per_trial,
            cpus_per_trial=self.cpus_per_trial,
            max_concurrent=self.max_concurrent,
            simulate=self.simulate or "",
            first_rung_seeds=self.first_rung() or 0,
        )

    def continuing(self, started: Invocation) -> SearchConfig:
        """``--resume``: the restored trials need the original invocation's data, whatever the flags say now."""
        return replace(
            self,
            preset=started.preset,
            model=started.model,
            epochs=started.epochs,
            protocol=started.protocol,
            auxiliary=started.candidates or None,
            simulate=started.simulate or None,
            first_rung_seeds=started.first_rung_seeds or None,
            seeds=len(started.seeds) if started.first_rung_seeds else self.seeds,  # K, for the check of N <= K
        )
