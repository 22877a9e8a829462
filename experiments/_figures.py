"""Small plotting helpers shared by the experiments' figure functions."""
from __future__ import annotations


def log_ticks_plain(axis) -> None:
    """Tick labels of a log axis as plain numbers (20, 300, 10,000), not 2x10^1 or 1e4; minor
    ticks are labelled only where the axis spans less than about two decades (matplotlib's rule)."""
    from matplotlib import ticker

    class Plain(ticker.LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:,.0f}" if x >= 1 else f"{x:.2g}"

    axis.set_major_formatter(Plain(labelOnlyBase=False))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
