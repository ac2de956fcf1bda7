"""Finalize's claims on whole simulated studies under a parameterised noise model: the fast calibration.

Each study is drawn here and driven through the functions finalize itself uses (``choose``,
``search_risk``, ``final_seeds``, ``collect``, ``ablation``'s role, ``claims.compare`` at every
look, hence ``stats.verdict`` and the spending plan) on trial tables shaped like MLflow's. The model:

    score(config, seed, split) = true(config) + luck(config, seed) + shared(seed) + noise(split)

``true`` = ``BASE + effect * multitask + other(config)``: ``effect`` is what the auxiliary tasks
add; ``other`` what differs between configs for other reasons (``config_sd`` of spread, and an lr
curve ``-lr_depth * (log10 lr - log10 3e-5)**2`` over lr drawn log-uniform in [1e-5, 1e-4]); the
ablation of the winner keeps its ``other`` and loses ``effect``. ``luck`` is a config's seed effect
shared by its dev and test scores, ``shared`` a seed's effect on every config, ``noise`` the
evaluation noise of one split. ``collapse``: the share of a prone config's seed runs that fail
(dev and test) to ``fail_to`` (the majority rate unless told); its other runs gain what keeps the
config's mean at ``true`` (the skewed null: usually better, the same mean). Which configs are prone:
``prone`` names the side (every multitask config, every config, or the baseline alone),
``prone_share`` the share of that side drawn prone per config, ``prone_lr`` an lr above which a
config is prone (the failure of fine-tuning at a high lr; 0: any lr). ``single_share``: the share of
the trials after the baseline that are single-task (0: the single-task side is the baseline alone,
the default search's shape). ``grid``: each multitask config records an auxiliary set and a schema of
absa's grid (:data:`CELLS`, in trial order) and every config its lr, as real trials do, so that the failure
rules that read what a config is made of (its kin, groups, what explains a failure) act on them; proneness
stays drawn per config, whatever the config is made of. The search has no early stopping here (the
through-the-search calibration, :mod:`search.simulation.calibration`, has it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from search.answer.claims import ABLATION, TUNED, Contender, compare
from search.answer.contenders import choose, collect, final_seeds, search_risk
from search.answer.sequential import Design, default_max_seeds
from search.tracking.outcome import COMPLETED
from search.tracking.trial_record import TrialRecord
from spaces.studies import THESIS_SCHEMAS
from trainables.config import TrainConfig
from trainables.results import DEGENERATE, seed_key

PRIMARY, METRIC = "semeval", "acc_4way"
DEV = f"{PRIMARY}/dev/{METRIC}"  # the objective's metric: its seed mean is the objective
BASE, MAJORITY = 0.85, 0.58  # the null truth's acc_4way and its majority rate
CONFIG = TrainConfig(tasks=(PRIMARY,), primary=PRIMARY)  # the model trains nothing: any config will do
PRONE = ("multitask", "any", "baseline")
CANDIDATES = ("sst2", "pos", "sentihood")  # absa's auxiliary candidates
AUXILIARY = tuple("+".join(c) for n in range(1, 4) for c in combinations(CANDIDATES, n))
CELLS = tuple((a, s) for s in THESIS_SCHEMAS for a in AUXILIARY)  # absa's auxiliary sets x schemas


@dataclass(frozen=True)
class Simulation:
    """One simulated study's shape; scores in accuracy units (0.01 = 1 pp)."""

    trials: int = 30
    search_seeds: int = 3
    looks: tuple[int, ...] = (5,)  # final seeds at each look (3 -> 5 -> 10: (3, 5, 10))
    effect: float = 0.0  # true gain of the auxiliary tasks: every multitask config over its ablation
    seed_sd: float = 0.01
    eval_sd: float = 0.005
    shared_sd: float = 0.0  # seed luck every config shares (what pairing removes)
    config_sd: float = 0.0  # true spread between configs for reasons other than the auxiliary tasks
    lr_depth: float = 0.0  # true loss per decade squared away from lr 3e-5 (0: lr does not matter)
    collapse: float = 0.0  # share of a prone config's seed runs that fail (mean kept)
    prone: str = "multitask"  # which configs may be prone: "multitask", "any" or "baseline"
    prone_share: float = 1.0  # share of those drawn prone, per config
    prone_lr: float = 0.0  # only a config with lr above this is prone (0: any lr)
    fail_to: float = MAJORITY  # a failed run's score (the majority rate: a collapse)
    single_share: float = 0.5  # share of the trials after the baseline that are single-task
    weak_share: float = 0.0  # share of the multitask configs weak on every seed (never failed: they learn less)
    weak_by: float = 0.0  # how much less a weak config's every seed scores
    max_seeds: int | None = None  # the spending plan (None: finalize's default for the first look)
    grid: bool = False  # configs record absa's auxiliary sets, schemas and their lrs (else: all SST-2, no lr)

    def __post_init__(self) -> None:
        if self.trials < 2:
            raise ValueError(f"Simulation.trials = {self.trials}: expected >= 2 (the baseline and a multitask trial)")
        if not self.looks or list(self.looks) != sorted(set(self.looks)) or self.looks[0] < 2:
            raise ValueError(f"Simulation.looks = {self.looks}: expected increasing seed counts >= 2")
        if not 0 <= self.collapse < 1:
            raise ValueError(f"Simulation.collapse = {self.collapse}: expected in [0, 1)")
        if self.prone not in PRONE:
            raise ValueError(f"Simulation.prone = {self.prone!r}: expected one of {', '.join(PRONE)}")
        if not 0 <= self.weak_share <= 1 or self.weak_by < 0:
            raise ValueError(f"Simulation.weak_share {self.weak_share} in [0, 1], weak_by {self.weak_by} >= 0 expected")
        if not 0 <= self.prone_share <= 1 or not 0 <= self.single_share < 1:
            shares = f"prone_share {self.prone_share} in [0, 1], single_share {self.single_share} in [0, 1)"
            raise ValueError(f"Simulation.{shares} expected")


@dataclass(frozen=True)
class Outcome:
    """One claim of one study: its verdict at each look and the true difference it is about."""

    claim: str
    verdicts: tuple[str, ...]
    true_diff: float


class World:
    """One study's truth and its fixed draws (a config-seed's luck, collapse and noise drawn once)."""

    def __init__(self, sim: Simulation, rng: np.random.Generator) -> None:
        self.sim, self.rng = sim, rng
        multitask = rng.random(sim.trials) >= sim.single_share
        multitask[0] = False  # t00 baseline
        while not multitask.any():  # no multitask trial: no verdict; the rate is among studies with one
            multitask[1:] = rng.random(sim.trials - 1) >= sim.single_share
        lr = np.log10(2e-5) * np.ones(sim.trials)
        lr[1:] = rng.uniform(-5, -4, sim.trials - 1)
        other = rng.normal(0.0, sim.config_sd, sim.trials) - sim.lr_depth * (lr - math.log10(3e-5)) ** 2
        self.multitask, self.other, self.lr = list(multitask), list(other), list(lr)
        # what a weak config's auxiliary tasks cost it (its ablation has none); drawn only where a regime has weak
        # configs, so that every other regime's draws stay as they were
        weak = multitask & (rng.random(sim.trials) < sim.weak_share) if sim.weak_share else np.zeros(sim.trials)
        self.weak = list(sim.weak_by * weak)
        self.prone = [self.draw_prone(i) for i in range(sim.trials)]
        self.luck: dict[tuple[int, int], tuple[float, bool]] = {}
        self.shared: dict[int, float] = {}

    def add_ablation(self, winner: int) -> int:
        """The winner's ablation, a config of its own: the winner's ``other``, no auxiliary tasks."""
        self.multitask.append(False)
        self.other.append(self.other[winner])
        self.lr.append(self.lr[winner])
        self.weak.append(0.0)
        self.prone.append(self.draw_prone(len(self.other) - 1))
        return len(self.other) - 1

    def draw_prone(self, config: int) -> bool:
        """Whether ``config`` fails on some seeds: its side, its lr, then a draw of ``prone_share``."""
        sim = self.sim
        side = {"multitask": self.multitask[config], "any": True, "baseline": config == 0}[sim.prone]
        if not side or sim.collapse == 0 or (sim.prone_lr and self.lr[config] <= math.log10(sim.prone_lr)):
            return False
        return bool(self.rng.random() < sim.prone_share)

    def failed(self, config: int, seeds: list[int]) -> dict[int, bool]:
        """Which of ``seeds`` (scored already) failed in config ``config``: what its trainer would flag."""
        return {s: self.luck[config, s][1] for s in seeds}

    def true(self, config: int) -> float:
        return BASE + self.sim.effect * self.multitask[config] - self.weak[config] + self.other[config]

    def score(self, config: int, seed: int) -> float:
        sim = self.sim
        if (config, seed) not in self.luck:
            fell = self.prone[config] and self.rng.random() < sim.collapse
            self.luck[config, seed] = (self.rng.normal(0.0, sim.seed_sd), fell)
        if seed not in self.shared:
            self.shared[seed] = self.rng.normal(0.0, sim.shared_sd)
        luck, fell = self.luck[config, seed]
        if fell:
            return sim.fail_to
        gain = sim.collapse * (self.true(config) - sim.fail_to) / (1 - sim.collapse) if self.prone[config] else 0.0
        return self.true(config) + gain + luck + self.shared[seed] + self.rng.normal(0.0, sim.eval_sd)


def trial_row(
    trial: int, multitask: bool, dev: dict[int, float], failed: dict[int, bool], lr: float | None = None
) -> TrialRecord:
    """A completed trial as the trial table holds it (what ``choose`` reads), with the trainer's degenerate flag
    per seed where the regime failed it; with ``lr`` (log10), the grid's cell of the trial and its lr."""
    values = list(dev.values())
    aux, schema = ("sst2" if multitask else "none"), ""
    if lr is not None:
        aux, schema = CELLS[(trial - 1) % len(CELLS)] if multitask else ("none", "single")
    return TrialRecord(
        run_id=f"t{trial:02d}",
        label=f"t{trial:02d}",
        status=COMPLETED,
        number=trial,
        key=f"t{trial:02d}",
        baseline=trial == 0,
        auxiliary=aux,
        schema=schema,
        lr=math.nan if lr is None else 10**lr,
        objective=float(np.mean(values)),
        objective_std=float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
        objective_metric=DEV,
        metrics={seed_key(DEV, s): v for s, v in dev.items()} | flags(failed),
    )


def flags(failed: dict[int, bool]) -> dict[str, float]:
    """The trainer's per-seed degenerate flags (``trainables.degenerate``) as a record holds them."""
    return {seed_key(DEGENERATE, s): float(f) for s, f in failed.items()}


def simulate_study(sim: Simulation, rng: np.random.Generator) -> list[Outcome]:
    """One study through finalize's functions; each claim's verdicts at every look."""
    world = World(sim, rng)
    searched = list(range(1, sim.search_seeds + 1))
    table = [
        trial_row(
            i,
            world.multitask[i],
            {s: world.score(i, s) for s in searched},
            world.failed(i, searched),
            world.lr[i] if sim.grid else None,
        )
        for i in range(sim.trials)
    ]
    winner_row, opponent_row = choose(table, "max")
    configs = {"winner": winner_row.number, "opponent": opponent_row.number}
    configs[ABLATION] = world.add_ablation(configs["winner"])
    seeds = final_seeds(searched, sim.looks[-1])
    sides = {}
    for role, config in configs.items():
        row = {"winner": winner_row, "opponent": opponent_row}.get(role, TrialRecord(run_id="", label="abl"))
        c = Contender(role, row, CONFIG)
        final = {seed_key(DEV, s): world.score(config, s) for s in seeds}  # dev before test: the draws' order
        final |= {seed_key(f"{PRIMARY}/test/{METRIC}", s): world.score(config, s) for s in seeds}
        final |= flags(world.failed(config, seeds))
        collect(c, [TrialRecord(row.run_id, row.label, objective_metric=DEV, metrics=final)], PRIMARY, seeds)
        sides[role] = c
    design = Design(sim.max_seeds or default_max_seeds(sim.looks[0]))
    out = []
    for claim, other in ((TUNED, "opponent"), (ABLATION, ABLATION)):
        other_key = opponent_row.key if other == "opponent" else ""  # the ablation is no trial of the search
        risk = search_risk(table, MAJORITY, winner_row.key, other_key)
        verdicts, pairs = [], []
        for k in sim.looks:
            look = compare(
                claim,
                sides["winner"],
                sides[other],
                metrics=[METRIC],
                seeds=seeds[:k],
                mode="max",
                objective_metric=METRIC,
                fallback=None,
                floor={METRIC: MAJORITY},
                earlier=pairs,
                design=design,
                risk=risk,
            ).headline
            verdicts.append(look.verdict)
            pairs.append(look.diff.n)
        out.append(Outcome(claim, tuple(verdicts), world.true(configs["winner"]) - world.true(configs[other])))
    return out
