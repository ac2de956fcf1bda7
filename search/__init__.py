"""Study orchestration: Optuna + Ray Tune + ASHA + MLflow around the ``trainables`` core.

Command-line modules at the top (``python -m search.run``, ``search.finalize``, ``search.report``,
``search.estimate``, ``search.predict``); below them four rooms, imports pointing one way only:

- ``answer``: the final comparison, the ranking, plots and report (what a study concludes);
- ``study``: one study invocation on Ray Tune (prepare, tuner, searcher, scheduler, progress, ending);
- ``tracking``: MLflow (record names, the tracker callback, run reads, the spool, the registry);
- ``infra``: Ray connection, resources, disk, storage, console quieting.
"""
