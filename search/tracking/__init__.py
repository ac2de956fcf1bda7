"""MLflow for a study: record names (:mod:`.records`, no MLflow or Ray), the tracker callback,
run reads, the on-disk spool and its sink, the UI view, the model registry."""
