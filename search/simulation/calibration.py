"""How often finalize's verdict says "better" when multitask training does not help: measured.

Whole studies are simulated and driven through the functions finalize itself uses (``choose``,
``final_seeds``, ``collect``, ``compare``, hence ``stats.verdict``) on trial tables shaped like
:func:`search.tracking.runs.trial_table`'s. The model of a score:

    score(config, seed, split) = true(config) + luck(config, seed) + noise(split)

``true`` is a config's score with infinite seeds (the multitask ones ``effect`` higher, every
config ``config_sd`` apart), ``luck`` the seed's effect on that config, shared by its dev and its
test score (sd ``seed_sd``), ``noise`` the evaluation noise of one split (sd ``eval_sd``). Trials
are multitask or single-task at even odds, as the space draws them; the search scores dev on its
seeds, finalize trains winner and opponent on K more and compares their test scores.

``python -m search.simulation.calibration [--studies N]`` prints the false "better" rate under the
null with its Monte Carlo standard error, and the power at a true effect of one seed sd;
``--reuse-search-seeds`` shows what testing on the seeds that chose the winner did.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from search.answer.comparison import Contender, compare
from search.answer.contenders import choose, collect, final_seeds
from search.answer.stats import BETTER
from search.tracking.outcome import COMPLETED
from search.tracking.records import OBJECTIVE, objective_seed_key
from trainables.config import TrainConfig
from trainables.results import seed_key

PRIMARY, METRIC = "semeval", "acc_4way"
CONFIG = TrainConfig(tasks=(PRIMARY,), primary=PRIMARY)  # the simulation trains nothing: any config will do


@dataclass(frozen=True)
class Simulation:
    """One simulated study's shape; scores in accuracy units (0.01 = 1 pp)."""

    trials: int = 30
    search_seeds: int = 3
    final_seeds: int = 5
    effect: float = 0.0  # true gain of every multitask config over every single-task one
    seed_sd: float = 0.01  # a seed's luck, shared by its dev and test scores
    eval_sd: float = 0.005  # evaluation noise of one split
    config_sd: float = 0.0  # spread of true scores between configs (0: the null of "no config matters")
    reuse_search_seeds: bool = False  # the old finalize: final seeds 1..K, the search's among them

    def __post_init__(self) -> None:
        if self.trials < 2:
            raise ValueError(f"Simulation.trials = {self.trials}: expected >= 2 (the baseline and a multitask trial)")


def simulate_study(sim: Simulation, rng: np.random.Generator) -> str:
    """One study through choose / collect / compare; the headline verdict."""
    multitask = rng.random(sim.trials) < 0.5
    multitask[0] = False  # t00 baseline
    while not multitask.any():  # a study with no multitask trial has no verdict: the rate is among those with one
        multitask[1:] = rng.random(sim.trials - 1) < 0.5
    true = 0.7 + sim.effect * multitask + rng.normal(0.0, sim.config_sd, sim.trials)
    luck: dict[tuple[int, int], float] = {}

    def score(trial: int, seed: int) -> float:
        if (trial, seed) not in luck:
            luck[trial, seed] = rng.normal(0.0, sim.seed_sd)
        return float(true[trial] + luck[trial, seed] + rng.normal(0.0, sim.eval_sd))

    searched = list(range(1, sim.search_seeds + 1))
    table = pd.DataFrame(
        [trial_row(i, bool(multitask[i]), {s: score(i, s) for s in searched}) for i in range(sim.trials)]
    )
    winner_row, opponent_row = choose(table, "max")
    seeds = list(range(1, sim.final_seeds + 1)) if sim.reuse_search_seeds else final_seeds(searched, sim.final_seeds)
    sides = []
    for role, row in (("winner", winner_row), ("opponent", opponent_row)):
        c = Contender(role, row, CONFIG)
        final = {objective_seed_key(s): score(row.trial, s) for s in seeds}
        final |= {seed_key(f"{PRIMARY}/test/{METRIC}", s): score(row.trial, s) for s in seeds}
        collect(c, [pd.Series(final)], PRIMARY, seeds)
        sides.append(c)
    _, headline = compare(sides[0], sides[1], [METRIC], seeds, "max", METRIC)
    return headline["verdict"]


def trial_row(trial: int, multitask: bool, dev: dict[int, float]) -> dict:
    """A completed trial as the trial table holds it (the columns ``choose`` reads)."""
    values = list(dev.values())
    return {
        "trial": trial,
        "label": f"t{trial:02d}",
        "run_id": f"t{trial:02d}",
        "status": COMPLETED,
        "baseline": trial == 0,
        "auxiliary": "sst2" if multitask else "none",
        "canonical_key": f"t{trial:02d}",
        OBJECTIVE: float(np.mean(values)),
        "objective_std": float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
        **{objective_seed_key(s): v for s, v in dev.items()},
    }


def better_rate(sim: Simulation, studies: int, seed: int = 0) -> tuple[float, float]:
    """The share of ``studies`` simulated studies whose verdict is "better", and its Monte Carlo SE."""
    rng = np.random.default_rng(seed)
    hits = sum(simulate_study(sim, rng) == BETTER for _ in range(studies))
    rate = hits / studies
    return rate, math.sqrt(max(rate * (1 - rate), 1e-12) / studies)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m search.simulation.calibration", description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reuse-search-seeds", action="store_true", help="the old finalize, for contrast")
    args = p.parse_args()
    null = Simulation(reuse_search_seeds=args.reuse_search_seeds)
    rate, se = better_rate(null, args.studies, args.seed)
    nominal_se = math.sqrt(0.025 * 0.975 / args.studies)
    print(f"{args.studies} simulated studies of {null}")
    print(
        f'null (no true effect): "better" in {rate:.4f} ± {se:.4f} (MC SE); '
        f"bound 0.025 + 2 SE = {0.025 + 2 * nominal_se:.4f}"
    )
    power, power_se = better_rate(
        Simulation(effect=null.seed_sd, reuse_search_seeds=null.reuse_search_seeds), args.studies, args.seed + 1
    )
    print(f"power at a true effect of one seed sd ({null.seed_sd}): {power:.4f} ± {power_se:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
