"""Markdown tables of result rows: the one formatter of the experiments' summaries and of the
calibration and benchmark reports."""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def fmt(v: Any) -> str:
    """A cell: "n/a" for None, "-" for NaN, 4 significant digits (3 in scientific notation for
    magnitudes >= 1e5 or < 1e-3)."""
    if v is None:
        return "n/a"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "-"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return str(v)


def markdown_table(rows: list[dict]) -> str:
    """A Markdown table with a column per key (in order of first appearance) and a line per row."""
    if not rows:
        return "(no rows)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"
