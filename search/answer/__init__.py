"""What a study concludes: the final comparison on fresh seeds, the dev ranking, plots and report.

Reads MLflow through :mod:`search.tracking`; retraining goes through :mod:`search.study`'s trainable.
"""
