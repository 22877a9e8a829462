"""The one style of every figure that jaxbandits and its experiments write.

Every figure is laid out by matplotlib's constrained layout (:func:`new_figure`), so that no label,
tick or title runs into a neighbouring panel or off the figure; its legend sits outside the panels
(:func:`legend_outside`), never over the data.  Series are told apart by colour *and* marker
(:func:`series_styles`, the same algorithm drawn alike in every panel of a figure), and several
series at the same grid point are dodged sideways (:func:`dodge`) so that none hides another when
their values agree.  An axis that carries a grid of parameter values (a number of arms, a
dimension, a budget) is ticked at those values and nowhere else (:func:`grid_axis`): integers get
integer ticks, and a single grid point is drawn as a point in a short axis, not spread over a
default range.  Tick labels of a log axis are plain numbers (:func:`plain_log_ticks`).
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

#: markers, in order: series i of a figure gets MARKERS[i % len(MARKERS)]
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*")
#: dodge span at one grid point, as a fraction of the spacing between neighbouring grid points
DODGE_SPAN = 0.6


def new_figure(nrows: int = 1, ncols: int = 1, *, panel: tuple[float, float] = (4.4, 3.4),
               extra: tuple[float, float] = (0.0, 0.0), **kw):
    """``(fig, axes)`` with ``axes`` a 2-D array (``squeeze=False``), under constrained layout;
    ``panel``: inches per panel (width, height), ``extra``: inches added for legends and titles."""
    import matplotlib.pyplot as plt

    size = (panel[0] * ncols + extra[0], panel[1] * nrows + extra[1])
    return plt.subplots(nrows, ncols, figsize=size, squeeze=False, layout="constrained", **kw)


def series_styles(names: Iterable[str]) -> dict[str, dict]:
    """name -> keyword arguments (``color``, ``marker``) for ``plot``/``errorbar``, in the order the
    names first appear: the ten tab10 colours and twelve markers in turn, so that no two of the
    first 60 series look alike (and none is drawn in a pale colour)."""
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10")
    return {a: dict(color=cmap(i % 10), marker=MARKERS[i % len(MARKERS)])
            for i, a in enumerate(dict.fromkeys(names))}


def _step(values: np.ndarray, log: bool) -> float:
    """The smallest gap between neighbouring grid values (in log space on a log axis); for one
    value, the gap of a grid through it (1 for an integer, a factor 2 on a log axis)."""
    v = np.unique(np.asarray(values, float))
    t = np.log(v) if log else v
    if len(t) > 1:
        return float(np.min(np.diff(t)))
    if log:
        return math.log(2.0)
    x = float(v[0]) if len(v) else 0.0
    return 1.0 if x == round(x) else max(abs(x) * 0.5, 1e-12)


def dodge(x, i: int, n: int, *, grid: Sequence[float] | None = None, log: bool = False,
          span: float = DODGE_SPAN) -> np.ndarray:
    """Positions of series ``i`` of ``n`` drawn at grid values ``x``: shifted sideways so that the
    ``n`` series at one grid value spread over at most ``span`` times the grid's spacing (``grid``:
    every grid value of the panel, default ``x``; neighbours ``span / 5`` of it apart when there are
    fewer than five series), multiplicatively on a log axis."""
    x = np.asarray(x, float)
    if n <= 1:
        return x
    step = _step(x if grid is None else np.asarray(grid, float), log)
    off = (i - (n - 1) / 2) * span * step / max(n, 5)
    return x * math.exp(off) if log else x + off


def _fmt(v) -> str:
    v = float(v)
    if v == round(v) and abs(v) < 1e15:
        return f"{int(round(v)):,}"
    return f"{v:g}"


def grid_axis(ax, values: Sequence[float], *, axis: str = "x", log: bool = False,
              labels: Sequence[str] | None = None, max_labels: int = 12) -> None:
    """Tick ``ax``'s ``axis`` at the grid ``values`` only (labelled with ``labels``, or the values
    as plain numbers), limits half a grid step beyond the ends (a single value: 1.5 steps either
    side), no minor ticks; past ``max_labels`` values, every k-th value is labelled."""
    from matplotlib.ticker import NullLocator

    vals = np.unique(np.asarray(values, float)) if labels is None else np.asarray(values, float)
    if len(vals) == 0:
        return
    a = ax.xaxis if axis == "x" else ax.yaxis
    if log:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    step = _step(vals, log)
    pad = 1.5 * step if len(np.unique(vals)) == 1 else step / 2
    lo, hi = float(np.min(vals)), float(np.max(vals))
    lim = (lo * math.exp(-pad), hi * math.exp(pad)) if log else (lo - pad, hi + pad)
    text = list(labels) if labels is not None else [_fmt(v) for v in vals]
    every = max(1, math.ceil(len(vals) / max_labels))
    text = [t if k % every == 0 else "" for k, t in enumerate(text)]
    (ax.set_xticks if axis == "x" else ax.set_yticks)(vals, text)
    a.set_minor_locator(NullLocator())
    (ax.set_xlim if axis == "x" else ax.set_ylim)(*lim)


def integer_ticks(axis) -> None:
    """Major ticks of ``axis`` (``ax.xaxis``/``ax.yaxis``) at integers only."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def plain_log_ticks(axis) -> None:
    """Tick labels of a log axis as plain numbers (20, 300, 10,000), not 2x10^1 or 1e4; minor
    ticks are labelled only where the axis spans less than about two decades (matplotlib's rule)."""
    from matplotlib import ticker

    class Plain(ticker.LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:,.0f}" if x >= 1 else f"{x:.2g}"

    axis.set_major_formatter(Plain(labelOnlyBase=False))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def legend_outside(where, handles=None, labels=None, *, title: str | None = None, ncols: int = 1,
                   loc: str = "outside right upper", **kw):
    """A legend outside the panels, never over data: ``where`` a figure (``loc``: beside all its
    panels, constrained layout making room, e.g. ``"outside lower center"``) or an axes (to its
    right); ``handles``/``labels`` default to every labelled artist of the axes (of a figure: the
    first occurrence of each label)."""
    from matplotlib.figure import Figure

    opts = dict(fontsize="small", title_fontsize="small", frameon=False, ncols=ncols, title=title)
    opts.update(kw)
    if isinstance(where, Figure):
        if handles is None:
            pairs = {}
            for ax in where.axes:
                for h, lab in zip(*ax.get_legend_handles_labels()):
                    pairs.setdefault(lab, h)
            handles, labels = list(pairs.values()), list(pairs)
        if not handles:
            return None
        return where.legend(handles, labels, loc=loc, **opts)
    if handles is None:
        handles, labels = where.get_legend_handles_labels()
    if not handles:
        return None
    return where.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **opts)
