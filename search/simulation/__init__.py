"""Everything simulated, in one home: the truth model (:mod:`.truth`), the simulated trial's Tune
trainable (:mod:`.trainable`), an in-process event-driven backend on a simulated clock that drives the
study's real searcher and scheduler through Tune's calls (:mod:`.backend`, :mod:`.study`), and what is
measured with them: search quality against the truth (:mod:`.selection`, :mod:`.optimum`,
:mod:`.strategies`) and the verdict's calibration (:mod:`.calibration`).

``kind`` is the simulated trial kind (``--simulate``) and the chooser of a study's kind, ``trial`` what
the scheduler sees, ``results`` what a trial reports, ``backend`` the loop, ``study`` builds one from a
``SearchConfig`` through the study's plan, ``selection`` picks the config a study would recommend and scores it,
``optimum`` finds the truth's best config, ``strategies`` names the strategies the benchmark compares.
Nothing is re-exported here, so that importing the truth does not import Ray or Optuna.
"""
