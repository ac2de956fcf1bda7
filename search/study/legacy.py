"""Tune experiments saved by an older version, restorable by ``--resume``: the one converter of old pickles
(besides cohort halving's versioned state, ``search.study.cohort_rungs``).

Objects Tune pickled with a field missing (``tuner.pkl`` holds the scheduler and the callbacks as the study
created them) take the class's :data:`SavedDefaults.SAVED_DEFAULTS` for it (:class:`SavedDefaults`).

``Tuner.restore`` unpickles the searcher, scheduler and callbacks that ``search.run`` gave the
Tuner (and a simulated study's trainable and truth, where a pickle holds them), by the module paths
they had when the study started. Before the split those were flat modules (``search.searcher``,
``search.tracking``, ...), simulated trials lived in ``trainables/simulated/`` and the limiters in
``search.study.limiter``; this maps them onto the new ones.
"""

from __future__ import annotations

import copy
import importlib
import sys
from typing import Any, ClassVar

# module of a study saved before the split -> where its pickled classes live now
MOVED = {
    "search.searcher": "search.study.searcher",
    "search.scheduler": "search.study.scheduler",
    "search.progress": "search.study.progress",
    "search.disk": "search.infra.disk",
    "search.outcome": "search.tracking.outcome",
    # simulated trials moved from trainables/simulated/ to search/simulation/ (commit 2b525fe)
    "trainables.simulated": "search.simulation",
    "trainables.simulated.tune": "search.simulation.trainable",
    "trainables.simulated.truth": "search.simulation.truth.model",
    "trainables.simulated.reading": "search.simulation.truth.reading",
    # the limiters moved into the adapter to Ray's internals (2026-11-28), then to infra with Ray core's (11-29)
    "search.study.limiter": "search.infra.ray_compat",
    "search.study.tune_compat": "search.infra.ray_compat",
}
# a flat module that became a package of the same name: the classes it held, by their new module
BECAME_PACKAGES = {"search.tracking": {"MLflowTracker": "search.tracking.tracker"}}


def accept_saved_before_rooms() -> None:
    """Make the old module paths resolve (once, in the driver, just before ``Tuner.restore``)."""
    for old, new in MOVED.items():
        sys.modules.setdefault(old, importlib.import_module(new))
    for package, names in BECAME_PACKAGES.items():
        module = importlib.import_module(package)
        for name, new in names.items():
            if not hasattr(module, name):
                setattr(module, name, getattr(importlib.import_module(new), name))


class SavedDefaults:
    """Unpickling fills the fields an object pickled before they existed lacks: ``SAVED_DEFAULTS``, each the
    neutral value (the rule the older version decided with)."""

    SAVED_DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({**copy.deepcopy(self.SAVED_DEFAULTS), **state})
