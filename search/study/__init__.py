"""One study invocation on Ray Tune: prepare (data, preset), tuner (searcher, ASHA, callbacks),
run and its ending (nothing left RUNNING), the console's progress lines."""
