"""``--resume --trials N`` on a study that asked for fewer: N trials in total.

Tune restores the number of trials its search generator was given, and ``Tuner.restore`` takes no
new one, so the generator's saved state is raised first. Ray 2.60 keeps it as
``search_gen_state-<session>.json``, a cloudpickle of ``SearchGenerator.get_state()``
(``ray/tune/search/search_generator.py``); no public API changes it.
"""

from __future__ import annotations

import glob
import os

import ray.cloudpickle as cloudpickle

from search.infra.storage import local_path
from trainables.config import ConfigError

STATE = "search_gen_state-*.json"


def extend_trials(path: str, trials: int) -> int:
    """Raise the Tune experiment at ``path`` to ``trials`` in total; the number it had."""
    folder = local_path(path)
    if folder is None:
        raise ConfigError(f"--resume --trials {trials}: {path} is in an object store; expected a local --storage")
    # Ray restores the greatest name (its session's start time), not the newest file: its sync to
    # --storage rewrites every session's file, so their mtimes say nothing. Each is raised, in case.
    saved = sorted(glob.glob(os.path.join(folder, STATE)))
    if not saved:
        raise ConfigError(f"--resume --trials {trials}: {path} holds no saved searcher state to extend")
    before = 0
    for name in saved:
        with open(name, "rb") as f:
            state = cloudpickle.load(f)
        before = int(state["total_samples"])  # the last one read is the one Ray restores
        if trials > before:
            state["total_samples"], state["finished"] = trials, False
            with open(name, "wb") as f:
                cloudpickle.dump(state, f)
    return before
