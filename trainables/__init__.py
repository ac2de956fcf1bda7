"""The multitask fine-tuning core: tasks, encoder + heads, task sampling, loop, metrics.

Runs without Ray or MLflow; ``trainables.tune`` is the only module that imports Ray.
"""

from trainables.config import EncoderConfig, OptimConfig, SamplingConfig, TrainConfig

__all__ = ["EncoderConfig", "OptimConfig", "SamplingConfig", "TrainConfig"]
