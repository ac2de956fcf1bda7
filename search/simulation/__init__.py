"""Simulated studies in process, on a simulated clock (issue 18 part 3): the study's real searcher and
scheduler driven through Tune's calls by an event loop (:mod:`.backend`), so that whole strategies can be
repeated over many studies and scored against the truth (``benchmarks/search_quality.py``).

``trial`` is what the scheduler sees, ``results`` what a trial reports, ``backend`` the loop, ``study``
builds one from a ``SearchConfig``, ``selection`` picks the config a study would recommend and scores it,
``optimum`` finds the truth's best config, ``strategies`` names the strategies the benchmark compares.
"""

from search.simulation.backend import Backend, Event, SeedCount, all_seeds
from search.simulation.study import SimulatedStudy, simulate
from search.simulation.trial import SimTrial

__all__ = ["Backend", "Event", "SeedCount", "SimTrial", "SimulatedStudy", "all_seeds", "simulate"]
