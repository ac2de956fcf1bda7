"""Study orchestration: Optuna + Ray Tune + ASHA + MLflow around the ``trainables`` core."""
