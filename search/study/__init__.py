"""One study invocation on Ray Tune: the flags validated (``config``), the plan derived from them once
(``plan``: preset, base config, seeds, objective, trials, rungs, resources, stores, the record), the trial
kind it runs (``kind``: trained here, simulated in ``search.simulation.kind``), prepare (data, Ray), the
tuner (searcher, ASHA, callbacks), run and its ending (nothing left RUNNING), the console's progress lines."""
