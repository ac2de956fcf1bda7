"""How the answer's tables write numbers: one format for every table and log line."""

from __future__ import annotations


def fmt(mean: float | None, std: float) -> str:
    """``0.8123 ± 0.0040``; the mean alone without a std (one seed), ``–`` without a mean."""
    if mean is None or mean != mean:
        return "–"
    return f"{mean:.4f} ± {std:.4f}" if std == std else f"{mean:.4f}"


def signed(x: float) -> str:
    return "–" if x != x else f"{x:+.4f}"


def list_text(seeds: list[int]) -> str:
    return ",".join(map(str, seeds)) if seeds else "none"
