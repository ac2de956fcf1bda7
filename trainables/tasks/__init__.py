"""Task registry: one module per task; importing this package registers them all."""

from trainables.tasks import csv_task, pos, semeval, sentihood, sst2  # noqa: F401  (registration)
from trainables.tasks.base import (
    PROTOCOLS,
    SPLITS,
    DataError,
    Example,
    Task,
    declared_name,
    get_task,
    register,
    task_names,
)

__all__ = ["PROTOCOLS", "SPLITS", "DataError", "Example", "Task", "declared_name", "get_task", "register", "task_names"]
