"""The truth of simulated studies: a known model that scores any config, so the whole search stack can
run at scale without torch or data (``python -m search.run absa --simulate null``).

``model`` holds the truth (pure functions of a config), ``reading`` reads and checks a truth file;
the built-in truths live in ``builtin/``.
"""

from search.simulation.truth.model import Truth, TruthError
from search.simulation.truth.reading import builtin_truths, load_truth, resolve_truth

__all__ = ["Truth", "TruthError", "builtin_truths", "load_truth", "resolve_truth"]
