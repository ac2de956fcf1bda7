"""The multitask fine-tuning core: tasks, encoder + heads, task sampling, loop, metrics, seeds as a
fidelity, a Tune trial's config (``trial``).

Trains without Ray, Optuna or MLflow and imports nothing of ``search/``; ``trainables.tune`` (the Tune
trainable of a trained trial) is the only module that imports Ray (``tests/search/test_layout.py``).
Simulated trials live in ``search/simulation/``.
"""

from trainables.config import EncoderConfig, OptimConfig, SamplingConfig, TrainConfig

__all__ = ["EncoderConfig", "OptimConfig", "SamplingConfig", "TrainConfig"]
