"""The looks of a study's final comparison, recorded on its parent run and never overwritten.

Each finalize is one look: tag ``final_look_<j>`` holds its seed count and, per claim, its pair
count, boundary, spent error and verdict (JSON); ``final_max_seeds`` holds the spending plan's
planned most seeds, set by the first look and kept by every later one. A later finalize reads them
to spend only what is left (:mod:`search.answer.sequential`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from search.answer.sequential import Design, default_max_seeds
from trainables.config import ConfigError

LOOK_PREFIX = "final_look_"
MAX_SEEDS_TAG = "final_max_seeds"
ABLATION_VERDICT_TAG = "final_ablation_verdict"


def earlier_looks(tags: Mapping[str, str]) -> list[dict]:
    """The recorded looks, first to last."""
    found = {int(k[len(LOOK_PREFIX) :]): json.loads(v) for k, v in tags.items() if k.startswith(LOOK_PREFIX)}
    return [found[j] for j in sorted(found)]


def design_of(tags: Mapping[str, str], asked: int | None, first_look: int) -> Design:
    """The study's spending plan: the recorded one, else ``asked`` (``--max-seeds``), else the default."""
    recorded = tags.get(MAX_SEEDS_TAG)
    if recorded is not None:
        if asked is not None and asked != int(recorded):
            raise ConfigError(
                f"--max-seeds {asked}: this study's first look planned {recorded} most seeds; the plan cannot change "
                "once a look has spent error (omit --max-seeds)"
            )
        return Design(int(recorded))
    return Design(asked or default_max_seeds(first_look))


def pairs_before(looks: Sequence[dict], claim: str, seeds: int) -> list[int]:
    """A claim's pair counts at the looks taken with fewer seeds than this one."""
    return [look["claims"][claim]["pairs"] for look in looks if look["seeds"] < seeds and claim in look["claims"]]


def check_seeds(looks: Sequence[dict], seeds: int) -> None:
    """A look with fewer seeds than an earlier one would test a subset already tested."""
    most = max((look["seeds"] for look in looks), default=0)
    if seeds < most:
        raise ConfigError(
            f"--seeds {seeds}: an earlier finalize of this study looked at {most} seeds; ask for {most} "
            "(the same look again) or more"
        )


def record_look(client, parent_run_id: str, looks: Sequence[dict], this: dict, design: Design) -> None:
    """Tag this look (a repeated look at the same seeds is not a new one) and the plan."""
    client.set_tag(parent_run_id, MAX_SEEDS_TAG, str(design.max_seeds))
    if any(look["seeds"] == this["seeds"] for look in looks):
        return
    client.set_tag(parent_run_id, f"{LOOK_PREFIX}{len(looks) + 1}", json.dumps(this))


def recorded_spread(metrics: Mapping[str, float], metric: str) -> dict[str, float]:
    """The sd of the paired differences a finished study's last look recorded, per claim (parent run
    metrics ``final/diff/<metric>/std`` and ``final/ablation_diff/<metric>/std``)."""
    keys = {"tuned": f"final/diff/{metric}/std", "ablation": f"final/ablation_diff/{metric}/std"}
    return {claim: float(metrics[key]) for claim, key in keys.items() if key in metrics}
