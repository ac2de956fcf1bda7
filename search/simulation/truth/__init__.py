"""The truth of simulated studies: a known model that scores any config, so the whole search stack can
run at scale without torch or data (``python -m search.run absa --simulate null``).

``model`` holds the truth (pure functions of a config), ``reading`` reads and checks a truth file;
the built-in truths live in ``builtin/``. A real-curve table (``table``) is a truth too: ``replay`` looks
its measured scores up (``--simulate table.parquet``).
"""

from search.simulation.truth.model import Truth, TruthError
from search.simulation.truth.reading import builtin_truths, is_table, load_truth, resolve_truth
from search.simulation.truth.replay import TableTruth

__all__ = ["TableTruth", "Truth", "TruthError", "builtin_truths", "is_table", "load_truth", "resolve_truth"]
