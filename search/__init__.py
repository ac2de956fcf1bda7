"""Study orchestration: Optuna + Ray Tune + ASHA + MLflow around the ``trainables`` core.

Command-line modules at the top (``python -m search.run``, ``search.finalize``, ``search.report``,
``search.estimate``, ``search.predict``, ``search.serve``); below them five rooms, imports pointing one way
only (``tests/search/test_layout.py``):

- ``simulation``: simulated trials (the ``--simulate`` trial kind) and the in-process simulator that
  measures search strategies and the verdict's calibration against a truth file; its ``truth`` and
  ``trainable`` stand below every room, as ``trainables/`` does for a trained trial;
- ``answer``: the final comparison, the ranking, plots and report (what a study concludes);
- ``study``: one study invocation on Ray Tune: the flags (``config``), the plan derived from them once
  (``plan``), the trial kind (``kind``), then prepare, tuner, searcher, scheduler, progress, ending;
- ``tracking``: MLflow (record names, the tracker callback, run reads, the spool, the registry);
- ``infra``: Ray connection, resources, disk, storage, console quieting.
"""
