"""Benchmarks: each module a ``python -m benchmarks.NAME`` that measures one thing (throughput, GPU sharing,
search quality in the simulator, the verdict's calibration, the stack's cost per trial, ...); their results
live in ``benchmarks/results/``, their dated write-ups in ``benchmarks/results/HISTORY.md`` (the index:
``benchmarks/README.md``)."""
