"""Small plotting helpers shared by the experiments' figure functions."""
from __future__ import annotations


def log_ticks_plain(axis) -> None:
    """Tick labels of a log axis as plain numbers (20, 30, 50), not 2x10^1."""
    from matplotlib import ticker

    axis.set_major_formatter(ticker.LogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
