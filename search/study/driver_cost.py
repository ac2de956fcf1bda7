"""What a study's driver costs (CPU, memory) and its slots' trial processes hold, by trial and slot count, from
measurements (``python -m search.estimate --trials N --max-concurrent S`` prints it).

The driver's own work per trial (suggesting, scheduling) was measured in process by ``benchmarks.driver_scale``:
the default search with TPE over its last 256 finished trials, 256 slots, on the simulated ``late_bloomer`` truth
(x86_64, 2 cores, 2026-11-28). Between the measured sizes the CPU and the peak memory are interpolated; past the
largest they go on along the last segment's slope. Through Ray, Tune's controller adds its own work per result
(``benchmarks.sim_cost``: 191 ms of driver CPU a result at 1,000 trials on 64 slots, that figure including the
suggestions of the TPE of then, unbounded), and each slot holds a trial process: 125 MB (proportional set size)
for a simulated trial; a real trial adds its model, optimizer and batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# trials -> (driver CPU seconds, peak resident MB), benchmarks/results/driver_scale.jsonl (window 256)
# the window read incrementally and the scheduler's scans of live trials only: past the first thousand trials a
# trial costs about the same (37-38 ms over each study's last tenth)
MEASURED: dict[int, tuple[float, float]] = {1000: (21.8, 275.0), 3000: (93.5, 367.0), 10000: (308.3, 691.0)}
TUNE_CPU_S_PER_RESULT = 0.191  # benchmarks.sim_cost, 1,000 x 64, 2026-11-25 (includes suggestions then)
TRIAL_PROCESS_MB = 125  # a simulated trial's Ray worker, proportional set size, 2026-11-28


@dataclass(frozen=True)
class DriverCost:
    cpu_minutes: float  # the driver's own work, in process
    peak_memory_mb: float
    trial_processes_gb: float  # what the slots' trial processes hold, over the cluster (simulated trials)

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "driver_cpu_minutes": round(self.cpu_minutes, 1),
            "driver_peak_memory_mb": round(self.peak_memory_mb),
            "trial_processes_gb_at_least": round(self.trial_processes_gb, 1),
            "driver_measured": "in process, 256 slots, 2 cores (search/study/driver_cost.py); Ray adds "
            f"~{TUNE_CPU_S_PER_RESULT * 1000:.0f} ms of driver CPU a result",
        }


def along(x: float, xs: list[float], ys: list[float]) -> float:
    """``ys`` at ``x``: interpolated between the points, along the last segment past them (and the first before)."""
    if x <= xs[0]:
        return ys[0] * x / xs[0]  # no fixed cost measured below the smallest size: proportional
    if x >= xs[-1]:
        return ys[-1] + (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) * (x - xs[-1])
    return float(np.interp(x, xs, ys))


def driver_cost(trials: int, slots: int) -> DriverCost:
    sizes = sorted(MEASURED)
    cpu = along(trials, sizes, [MEASURED[n][0] for n in sizes])
    memory = along(max(trials, sizes[0]), sizes, [MEASURED[n][1] for n in sizes])
    return DriverCost(cpu / 60, memory, slots * TRIAL_PROCESS_MB / 1024)
