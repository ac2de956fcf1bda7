"""One JSON line a measurement, for the benchmarks that append to a results file as they go
(``benchmarks.driver_scale``, ``benchmarks.tracking_store``)."""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any


def append_row(out: Path, figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` with the date first and the machine and its load last: printed, appended to ``out``, returned."""
    row = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        **figures,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(row), flush=True)
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    return row
