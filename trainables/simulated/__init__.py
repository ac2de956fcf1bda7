"""Simulated trials: a known truth scores any config, so the whole search stack can run at scale
without torch or data (``python -m search.run absa --simulate null``; README, "Simulated studies").

``truth`` holds the model (pure functions), ``reading`` checks a truth file, ``tune`` is the thin Tune
wrapper that reports like :mod:`trainables.tune`. Built-in truths live in ``truths/``.
"""

from trainables.simulated.truth import Truth, TruthError, builtin_truths, load_truth, resolve_truth

__all__ = ["Truth", "TruthError", "builtin_truths", "load_truth", "resolve_truth"]
