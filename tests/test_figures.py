"""Every figure the library writes, drawn on small synthetic tables at the quick and at the full
size (matplotlib Agg, nothing is simulated), passes one layout check (:func:`layout_problems`):

* no two texts overlap (tick labels, axis labels, titles, legend entries, figure titles), no text
  runs into another panel, and every text lies inside the figure, at 7 pt or more;
* no legend covers plotted data (markers, lines, error bars, bars) of any panel;
* every panel labels both axes (a shared axis may leave its label to a neighbour or the figure);
* an axis whose plotted values are all integers has integer tick labels, and an axis whose data
  cover much of it has at least two labelled ticks (one grid point is a point, not a spread);
* no series hides another: two labelled series whose markers all fall on the same pixels need a
  dodge, and every legend entry shows a marker or a line.

``python tests/test_figures.py OUT`` writes every figure as a PNG into ``OUT`` (to look at them).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection, PolyCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

SIZES = ("quick", "full")


class FigureCatcher:
    """Stands in for the experiment context: keeps the figures instead of writing them."""

    def __init__(self):
        self.figs = []

    def savefig(self, fig, name="plot"):
        self.figs.append(fig)


# -- synthetic tables, shaped as the experiments' own at each size ---------------------------------
def table1_rows(size):
    from experiments.seed000_table1 import PAPER, PAPER_ROW

    rng = np.random.default_rng(1)
    quick = size == "quick"
    gens = ["code"] if quick else ["code", "paper"]
    ks = [1000] if quick else [1000, 2500, 5000, 7500]
    algs = (["LT&S (no averaging) [paper]", "LT&S (no averaging) [code]", "Oracle [code]"] if quick else
            ["LT&S (no averaging) [paper]", "LT&S [paper]", "LT&S (no averaging) [code]", "LT&S [code]",
             "Oracle [code]", "RAGE"])
    rows = []
    for g in gens:
        for K in ks:
            for a in algs:
                m = PAPER[PAPER_ROW[a]][K][0] * (0.4 if "[code]" in a and "LT&S" in a else 1.1)
                rows.append(dict(generator=g, K=K, algorithm=a, mean=m * rng.uniform(0.9, 1.1), se=0.05 * m,
                                 lower_bound=59.4 + K / 500))
    return rows


def fig_table1(size):
    from experiments.seed000_table1 import figure

    return [figure(table1_rows(size))]


def seed001_rows(size):
    quick = size == "quick"
    panels = {"a": ("d", [3] if quick else [5, 10, 15, 20, 25, 30, 35],
                    ["RAGE", "XY-adaptive", "XY-static"] if quick else
                    ["RAGE", "XY-adaptive", "LinGapE", "ALBA", "XY-static", "XY-oracle"]),
              "b": ("K", [50] if quick else [250, 500, 1000, 2000],
                    ["RAGE", "ALBA"] if quick else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]),
              "c": ("K", [50] if quick else [250, 500, 1000],
                    ["RAGE", "ALBA"] if quick else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]),
              "d": ("d", [4] if quick else [20, 40, 60, 80],
                    ["RAGE", "XY-oracle"] if quick else
                    ["RAGE", "XY-static", "XY-oracle", "XY-static [App F FW]", "XY-oracle [App F FW]",
                     "XY-oracle [rounding]"])}
    rows = []
    for p, (xname, xs, names) in panels.items():
        for x in xs:
            for i, a in enumerate(names):
                # the two XY-oracle variants of panel (d) agree exactly: a dodge keeps both visible
                m = 400.0 * x * (1 + (i if "rounding" not in a else names.index("XY-oracle")))
                rows.append(dict(panel=p, **{xname: x}, algorithm=a, mean=m, se=0.04 * m, lower_bound=30.0 * x))
    return rows


SEED001_PANELS = [("a", "d", "(a) Soare benchmark, omega=0.3"), ("b", "K", "(b) many arms (code instance)"),
                  ("c", "K", "(c) unit sphere, d = 9"), ("d", "d", "(d) transductive")]


def fig_seed001(size):
    from experiments.seed001_fig1 import plot

    ctx = FigureCatcher()
    plot(ctx, seed001_rows(size), SEED001_PANELS, "fig1")
    return ctx.figs


def fig_seed001_fig2(size):
    from experiments.seed001_fig1 import plot

    ctx = FigureCatcher()
    names = ["RAGE", "XY-static"] if size == "quick" else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]
    rows = [dict(panel="2a", D=D, algorithm=a, mean=300.0 * D * (i + 1), se=20.0, lower_bound=40.0 * D)
            for D in ([3] if size == "quick" else [3, 4, 5, 6]) for i, a in enumerate(names)]
    plot(ctx, rows, [("2a", "D", "(2a) multivariate testing")], "fig2a")
    return ctx.figs


SEED002_ALGS = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "OD-LinBAI", "Peace", "LinUCB",
                "LinGapE", "BayesGap-Lin"]


def accuracy_rows(size, x_key, xs, panel_key=None, panels=(None,)):
    names = SEED002_ALGS[1::4] if size == "quick" else SEED002_ALGS
    rows = []
    for pv in panels:
        for x in xs:
            for i, a in enumerate(names):
                acc = 1.0 if i < 2 else 0.9 - 0.07 * i  # the two best at 1.0: they coincide
                r = dict(**{x_key: x}, algorithm=a, accuracy=acc, acc_lo=max(0.0, acc - 0.06), acc_hi=min(1.0, acc + 0.04))
                if panel_key:
                    r[panel_key] = pv
                rows.append(r)
    return rows


def fig_seed002(size):
    from experiments.seed002_adaptive import plot_accuracy

    ctx = FigureCatcher()
    q = size == "quick"
    plot_accuracy(ctx, accuracy_rows(size, "K", [4] if q else [4, 8, 16, 32]), "K", "number of arms K (d = K - 1)",
                  "Soare instance, B = 100K", logx=True)
    plot_accuracy(ctx, accuracy_rows(size, "B_per_K", [50] if q else [10, 25, 50, 100, 200], "d", [5] if q else [5, 7, 10, 12]),
                  "B_per_K", "budget per arm B / K (pulls)", "logistic, K = 8", panel_key="d", logx=True)
    plot_accuracy(ctx, accuracy_rows(size, "Delta", [0.1, 0.3] if q else [0.05, 0.1, 0.2, 0.3, 0.5]), "Delta",
                  "gap Delta between the best and the other arms (reward units)",
                  "static instance e_1..e_16, B = 320, sigma = 3.16", name="accuracy_code")
    return ctx.figs


def fig_seed003_violin(size):
    from experiments.seed003_fig1 import violin_figure

    rng = np.random.default_rng(0)
    base = ["m-LinGapE (greedy)", "LinGIFA (greedy)"] if size == "quick" else \
        ["m-LinGapE (greedy)", "m-LinGapE (optimized)", "m-LinGapE (largest variance)", "LinGIFA (greedy)",
         "LinGIFA (optimized)", "LinGIFA (largest variance)", "LUCB", "UGapE", "LinGame (top-2)"]
    data = {f"{b} [{m}]": rng.gamma(5, 60 * (k + 1), 20 if size == "quick" else 500)
            for k, b in enumerate(base) for m in ("paper", "released code")}
    return [violin_figure(data, "classic K=4 m=2 omega=pi/6 (Fig. 1a)")]


def sweep_rows(size, x="K", values=None):
    rng = np.random.default_rng(0)
    values = values or ([10] if size == "quick" else [10, 100, 1000])
    algs = ["RAGE", "LT&S", "uniform + GLR"] if size == "quick" else \
        ["LT&S", "RAGE", "XY-static", "XY-oracle", "XY-adaptive", "ALBA", "Oracle", "uniform + GLR", "LinGame",
         "FWS", "TopTwo", "LinGapE"]
    recs = []
    for a, alg in enumerate(algs):
        for v in values:
            for j in range(3):
                for i in range(4):
                    # RAGE and LT&S: the same samples (paired keys, equal behaviour): must both show
                    s = int(rng.integers(100, 200)) * (1 if a < 2 else a)
                    recs.append(dict(algorithm=alg, **{x: v}, instance=j, rep=i, samples=s, correct=True,
                                     stopped=True, lower_bound=50.0))
    df = pd.DataFrame(recs)
    first = df["algorithm"] == algs[0]
    df.loc[df["algorithm"] == algs[1], "samples"] = df.loc[first, "samples"].to_numpy()
    return df


def fig_sweeps(size):
    from jaxbandits.sweeps import plot_error_rate, plot_ratio_distribution, plot_sample_complexity

    df = sweep_rows(size)
    return [plot_sample_complexity(df, "K").figure, plot_sample_complexity(df, "K", ratio=True).figure,
            plot_error_rate(df, "K", delta=0.05).figure, plot_ratio_distribution(df).figure]


def fig_hardest_theta(size):
    from experiments.design_hardest_theta import figure

    rows = [dict(arms=a, H_gradient=g, H_random=r, H_random_then_ascent=b, median_H_random=m)
            for a, g, r, b, m in [("soare(w=0.1)", 3.1, 2.4, 3.2, 1.2), ("sphere0(K=8)", 5.0, 4.1, 5.2, 1.9)]]
    return [figure(rows, n_starts=4 if size == "quick" else 64, n_random=2000 if size == "quick" else 200_000)]


def fig_probe_set(size):
    from experiments.design_probe_set import figure

    rng = np.random.default_rng(0)
    steps, n_test, n_val = (5, 64, 2) if size == "quick" else (150, 1000, 8)
    names = ("learned", "X = Z", "standard basis", "random (init)")
    logs = {n: rng.normal(3.0 + 0.3 * k, 0.3, n_test) for k, n in enumerate(names)}
    per_theta = {n: np.exp(v[:n_val]) * 20 for n, v in logs.items()}
    history = np.log(np.linspace(60, 20, steps)) + rng.normal(0, 0.05, steps)
    curve = [(i, float(np.exp(history[i]))) for i in range(0, steps, max(steps // 6, 1))] + [(steps, 20.0)]
    return [figure(history, curve, logs, per_theta, n_test=n_test, n_val=n_val)]


def fig_sensitivity(size):
    from experiments.design_sensitivity import figure

    n_w, sg = (4, np.array([0.5, 1.0, 2.0])) if size == "quick" else (25, np.linspace(0.25, 3.0, 12))
    om = np.geomspace(0.01, 0.5, n_w)
    T, G = 2 / om**2, -4 / om**3
    pred = T[:-1] + G[:-1] * np.diff(om)
    pred_log = T[:-1] * (om[1:] / om[:-1]) ** -2
    return [figure(om, sg, sg[:, None] ** 2 * T[None, :] * 2.6, T, G, G * 1.001, pred, pred_log)]


def fig_modern_vs_seeds(size):
    from experiments.modern_vs_seeds import figure

    q = size == "quick"
    algs = ["LT&S", "LT&S + elim (stopping)", "LT&S + elim (sampling)", "RAGE"] if q else \
        ["LT&S", "LT&S + elim (stopping)", "LT&S + elim (sampling)", "RAGE", "XY-static", "XY-oracle",
         "XY-adaptive", "ALBA", "Oracle", "LinGapE", "uniform + GLR", "uniform + GLR + elim (stopping)", "LinGame",
         "LinGame + elim (stopping)", "FWS", "FWS + elim (stopping)", "TopTwo", "TopTwo + elim (stopping)"]
    points = {"soare": [f"d={d}, K={d + 1}" for d in ([2] if q else [2, 4, 6, 8, 10])],
              "many_arms": ["d=2, K=1000"], "sphere": ["d=5, K=50"]}
    s = pd.DataFrame([dict(generator=g, point=p, algorithm=a, ratio=(1.5 + k) if a != "ALBA" else np.nan,
                           ratio_at_least=1.5 + k, ratio_se=0.1 * (1.5 + k))
                      for g, pts in points.items() for p in pts for k, a in enumerate(algs)])
    return [figure(s)]


def fig_sphere_sweep(size):
    from experiments.sphere_sweep import figure

    q = size == "quick"
    dims, ks = ([2, 5], [10]) if q else ([2, 5, 10, 20], [10, 100, 1000])
    df = sweep_rows(size, "num_arms", ks)
    df = pd.concat([df.assign(dim=d) for d in dims], ignore_index=True)
    if not q:  # as in the full run: cells with no runs, one with a single algorithm
        df = df[~((df["dim"] == 20) & (df["num_arms"] < 1000))]
        df = df[~((df["dim"] == 10) & (df["num_arms"] == 100) & (df["algorithm"] != "LT&S"))]
    df["delta"] = 0.05
    return [figure(df, dims, ks, df["algorithm"].nunique(), 0.05)]


def fig_tirinzoni_degenne(size):
    from experiments.tirinzoni_degenne_table1 import ORDER, PAPER, figure

    ways = ["preset"] if size == "quick" else ["preset", "defaults"]
    out = []
    for k, key in enumerate(ORDER):
        for w, way in enumerate(ways):
            m = (PAPER.get(key) or (40000.0, 0))[0] * (1.0 + 0.3 * w) * (1.0 + 0.01 * k)
            n = 2 if size == "quick" else 100
            out.append(dict(row=key, way=way, n=n, mean=m, se=m * (0.3 if n == 2 else 0.03), sd=m * 0.3, capped=0,
                            errors=0))
    return [figure(out)]


BENCH_BASELINES = {"fixed-confidence": (["LT&S", "RAGE", "FWS", "Top Two", "UniformGLR"],
                                        ["LT&S", "RAGE", "FWS", "Top Two", "LinGame", "UniformGLR",
                                         "LT&S + elimination at sampling", "XY-static", "XY-adaptive", "LinGapE"]),
                   "top-m": (["m-LinGapE (greedy)", "LinGame"], ["m-LinGapE (greedy)", "LinGIFA", "LUCB", "UGapE", "LinGame"]),
                   "fixed-budget": (["GSE", "OD-LinBAI"], ["GSE", "OD-LinBAI", "Peace", "BayesGap", "LinUCB"])}


def benchmark_rows(suite, size):
    """Per-run rows as :func:`jaxbandits.benchmark` gathers them: your algorithm behaves exactly as
    the baseline RAGE (same samples, same answers), so a plot must keep both visible."""
    from jaxbandits.benchmarking import SUITES

    s = SUITES[suite]
    rng = np.random.default_rng(2)
    names = [("GOptTracking", "yours")] + [(b, "baseline") for b in BENCH_BASELINES[suite][size == "full"]]
    recs = []
    for iset in s.sets:
        pts = iset.points(size)
        for p in pts:
            point = json.dumps({k: (v.item() if hasattr(v, "item") else v) for k, v in p.items()}, sort_keys=True)
            for j in range(iset.n_instances[size == "full"]):
                lb = 50.0 * (1 + 0.01 * j)
                draws = rng.integers(150, 400, 4)
                wrong = rng.random(4) < 0.1
                for a, (name, kind) in enumerate(names):
                    same = name in ("GOptTracking", "RAGE")
                    for i in range(4):
                        recs.append(dict(algorithm=name, set=iset.name, kind=kind, point=point, instance=j, rep=i,
                                         delta=0.05 if s.kind != "fixed-budget" else np.nan,
                                         samples=float(draws[i] * (1 if same else a + 1)),
                                         correct=bool(not wrong[i] if same else rng.random() > 0.05 * a),
                                         stopped=True, lower_bound=lb if s.kind != "fixed-budget" else np.nan))
    return pd.DataFrame(recs), s


def fig_benchmark(suite):
    def make(size):
        import tempfile

        from jaxbandits.benchmarking import summary_table, write_figures

        rows, s = benchmark_rows(suite, size)
        kept, close = [], plt.close
        plt.close = kept.append  # write_figures saves and closes each figure: keep them instead
        try:
            with tempfile.TemporaryDirectory() as d:
                paths = write_figures(rows, summary_table(rows, s), s, Path(d))
        finally:
            plt.close = close
        assert len(kept) == len(paths) == len(s.sets) + (s.kind == "fixed-confidence")
        return kept
    return make


#: name -> builder(size) -> list of figures
FIGURES = {"seed000_table1": fig_table1, "seed001_fig1": fig_seed001, "seed001_fig2": fig_seed001_fig2,
           "seed002 plot_accuracy": fig_seed002, "seed003 violin": fig_seed003_violin, "sweeps": fig_sweeps,
           "design_hardest_theta": fig_hardest_theta, "design_probe_set": fig_probe_set,
           "design_sensitivity": fig_sensitivity, "modern_vs_seeds": fig_modern_vs_seeds,
           "sphere_sweep": fig_sphere_sweep, "tirinzoni_degenne_table1": fig_tirinzoni_degenne,
           "benchmark fixed-confidence": fig_benchmark("fixed-confidence"),
           "benchmark top-m": fig_benchmark("top-m"), "benchmark fixed-budget": fig_benchmark("fixed-budget")}


# -- the checker ---------------------------------------------------------------------------------
MIN_PT = 7.0


def _drawn_ticks(axis):
    return axis._update_ticks()  # the ticks drawn: inside the view, with their current labels


def _texts(fig, r):
    """(owner, description, bbox, legend, text) of every visible, non-empty text drawn; owner: its
    axes (None for the figure's own texts and a figure legend's); legend: the legend holding it."""
    out = []

    def add(t, owner, what, leg=None):
        if t is None or not t.get_visible() or not t.get_text().strip():
            return
        bb = t.get_window_extent(r)
        if bb.width > 0 and bb.height > 0:
            out.append((owner, f"{what} {t.get_text()!r}", bb, leg, t))

    for t in fig.texts:
        add(t, None, "figure text")
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for t in (ax.title, ax._left_title, ax._right_title):
            add(t, ax, "title")
        for t in ax.texts:
            add(t, ax, "text")
        if ax.axison:
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                add(axis.label, ax, f"{name} label")
                add(axis.offsetText, ax, f"{name} offset")
                for tick in _drawn_ticks(axis):
                    add(tick.label1, ax, f"{name} tick")
                    add(tick.label2, ax, f"{name} tick")
    for leg in _legends(fig):
        owner = leg.axes if leg.axes is not None and leg in [a.get_legend() for a in fig.axes] else None
        for t in [leg.get_title(), *leg.get_texts()]:
            add(t, owner, "legend", leg)
    return out


def _legends(fig):
    return [a.get_legend() for a in fig.axes if a.get_legend() is not None] + list(fig.legends)


def _overlap(a, b, tol=1.0):
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tol) and (min(a.y1, b.y1) - max(a.y0, b.y0) > tol)


def _is_data(artist, ax):
    return artist.get_visible() and artist.get_transform().contains_branch(ax.transData)


def _sample(xy, step=3.0):
    """Points along a polyline in display space, every ``step`` pixels."""
    xy = np.asarray(xy, float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return xy
    out = [xy[:1]]
    for a, b in zip(xy[:-1], xy[1:]):
        n = max(int(np.hypot(*(b - a)) / step), 1)
        out.append(a + (b - a) * np.linspace(0, 1, n + 1)[1:, None])
    return np.concatenate(out)


def _data_points(ax):
    """Display coordinates of everything plotted in ``ax`` (sampled along lines), inside the axes."""
    pts = []
    for ln in ax.lines:
        if _is_data(ln, ax):
            xy = ln.get_transform().transform(ln.get_xydata())
            pts.append(_sample(xy) if ln.get_linestyle() not in ("None", "", " ") else xy)
    for c in ax.collections:
        if not c.get_visible():
            continue
        if isinstance(c, LineCollection) and c.get_transform().contains_branch(ax.transData):
            for seg in c.get_segments():
                pts.append(_sample(c.get_transform().transform(np.asarray(seg))))
        elif isinstance(c, PathCollection) and len(c.get_offsets()):
            pts.append(c.get_offset_transform().transform(np.asarray(c.get_offsets())))
        elif isinstance(c, PolyCollection):
            for p in c.get_paths():
                pts.append(_sample(c.get_transform().transform(p.vertices)))
    pts = [p for p in pts if len(p)]
    if not pts:
        return np.zeros((0, 2))
    pts = np.concatenate(pts)
    bb = ax.get_window_extent()
    inside = (pts[:, 0] >= bb.x0) & (pts[:, 0] <= bb.x1) & (pts[:, 1] >= bb.y0) & (pts[:, 1] <= bb.y1)
    return pts[inside & np.isfinite(pts).all(axis=1)]


def _bars(ax, r):
    """The drawn part of every bar (clipped to the axes: a bar from 0 on a log axis is unbounded)."""
    boxes = [Bbox.intersection(p.get_window_extent(r), ax.bbox) for p in ax.patches
             if isinstance(p, Rectangle) and p.get_visible() and p.get_width() and p.get_height() and _is_data(p, ax)]
    return [b for b in boxes if b is not None]


def _markers(ax, which):
    """Values (data coordinates) along ``which`` ("x"/"y") of the plotted markers and lines."""
    vals = []
    for ln in ax.lines:
        if _is_data(ln, ax) and len(ln.get_xydata()):
            vals.append(ln.get_xydata()[:, 0 if which == "x" else 1])
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_visible() and len(c.get_offsets()) and \
                c.get_offset_transform().contains_branch(ax.transData):
            vals.append(np.asarray(c.get_offsets())[:, 0 if which == "x" else 1])
    v = np.concatenate(vals) if vals else np.zeros(0)
    return v[np.isfinite(v)]


UNFILLED = set("x+|_1234") | {"None", "none", ""}


def _series(ax):
    """(label, display points, marker size in pixels, whether a series beneath stays visible) of
    the labelled series with markers, in drawing order."""
    out = []
    label = {id(ln): ln.get_label() for ln in ax.lines}
    for c in ax.containers:  # an error bar's label is its container's
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None:
            label[id(c.lines[0])] = c.get_label() or "_"
    lines = sorted(enumerate(ax.lines), key=lambda il: (il[1].get_zorder(), il[0]))
    for _, ln in lines:
        if _is_data(ln, ax) and not label[id(ln)].startswith("_") and ln.get_marker() not in (None, "None", "", " "):
            xy = ln.get_transform().transform(ln.get_xydata())
            xy = xy[np.isfinite(xy).all(axis=1)]
            see_through = (str(ln.get_marker()) in UNFILLED or str(ln.get_markerfacecolor()) in ("none", "None")
                           or ln.get_fillstyle() == "none" or (ln.get_alpha() is not None and ln.get_alpha() < 0.8))
            if len(xy):
                out.append((label[id(ln)], xy, ln.get_markersize() * ax.figure.dpi / 72, see_through))
    return out


def _labelled_ticks(axis):
    return [(t.get_loc(), t.label1.get_text()) for t in _drawn_ticks(axis)
            if t.label1.get_visible() and t.label1.get_text().strip()]


def layout_problems(fig) -> list[str]:
    """The problems this module's docstring lists, found in ``fig`` as drawn by the renderer, one
    sentence each (an empty list: the layout is clean)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    problems = []
    fbox = fig.bbox
    texts = _texts(fig, r)
    axes = [a for a in fig.axes if a.get_visible()]
    # texts: inside the figure, large enough, apart from one another and from the other panels
    for owner, what, bb, leg, t in texts:
        if bb.x0 < fbox.x0 - 1 or bb.y0 < fbox.y0 - 1 or bb.x1 > fbox.x1 + 1 or bb.y1 > fbox.y1 + 1:
            problems.append(f"{what} is cut off by the figure's edge")
        if t.get_fontsize() < MIN_PT:
            problems.append(f"{what} is set in {t.get_fontsize():.1f} pt (< {MIN_PT})")
        for ax in axes:
            if ax is not owner and owner is not None and _overlap(bb, ax.get_window_extent(r)):
                problems.append(f"{what} runs into another panel ({ax.get_title() or ax.get_label()!r})")
    for i, (o1, w1, b1, l1, _) in enumerate(texts):
        for o2, w2, b2, l2, _ in texts[i + 1:]:
            if (l1 is None or l1 is not l2) and _overlap(b1, b2):
                problems.append(f"{w1} overlaps {w2}")
    # legends: away from data, from texts and from other panels
    for leg in _legends(fig):
        lb = leg.get_window_extent(r)
        own = leg.axes if leg in [a.get_legend() for a in axes] else None
        for ax in axes:
            pts = _data_points(ax)
            inside = (pts[:, 0] > lb.x0 + 1) & (pts[:, 0] < lb.x1 - 1) & (pts[:, 1] > lb.y0 + 1) & (pts[:, 1] < lb.y1 - 1)
            if inside.any() or any(_overlap(lb, b) for b in _bars(ax, r)):
                problems.append(f"the legend {[t.get_text() for t in leg.get_texts()][:3]}... covers data of "
                                f"the panel {ax.get_title()!r}")
            if ax is not own and ax.get_label() != "<colorbar>" and _overlap(lb, ax.get_window_extent(r)) and own is not None:
                problems.append(f"the legend of {own.get_title()!r} runs into the panel {ax.get_title()!r}")
        for owner, what, bb, l2, _ in texts:
            if l2 is not leg and _overlap(lb, bb):
                problems.append(f"the legend overlaps {what}")
        for h in leg.legend_handles:
            lines = [h] if isinstance(h, Line2D) else \
                [c for c in getattr(h, "get_children", lambda: [])() if isinstance(c, Line2D)]
            if lines and not any((ln.get_marker() not in (None, "None", "", " ")) or
                                 (ln.get_linestyle() not in ("None", "", " ") and ln.get_linewidth() > 0)
                                 for ln in lines):
                problems.append("a legend entry shows nothing")
    # axes: labelled, sensible ticks, no hidden series
    supx = getattr(fig, "_supxlabel", None)
    supy = getattr(fig, "_supylabel", None)
    for ax in axes:
        if not ax.axison:
            continue
        title = ax.get_title() or ax.get_label()
        if ax.get_label() == "<colorbar>":
            if not (ax.get_xlabel().strip() or ax.get_ylabel().strip()):
                problems.append("a colour bar without a label")
            continue
        for name, get, siblings, sup in (("x", lambda a: a.get_xlabel(), ax.get_shared_x_axes(), supx),
                                         ("y", lambda a: a.get_ylabel(), ax.get_shared_y_axes(), supy)):
            if not any(get(a).strip() for a in siblings.get_siblings(ax)) and not (sup and sup.get_text().strip()):
                problems.append(f"the panel {title!r} has no {name} label")
        for name, axis, shared in (("x", ax.xaxis, ax.get_shared_x_axes()), ("y", ax.yaxis, ax.get_shared_y_axes())):
            ticks = _labelled_ticks(axis)
            for sib in shared.get_siblings(ax):  # a shared axis may leave its tick labels to a neighbour
                ticks = ticks or _labelled_ticks(sib.xaxis if name == "x" else sib.yaxis)
            vals = _markers(ax, name)
            if len(vals) and np.allclose(vals, np.round(vals)):
                frac = [s for loc, s in ticks if abs(loc - round(loc)) > 1e-9]
                if frac:
                    problems.append(f"the panel {title!r} plots integers along {name} but labels ticks {frac}")
            if len(vals) > 1 and len(ticks) < 2:
                lo, hi = axis.get_view_interval()
                tr = (lambda v: np.log(v)) if axis.get_scale() == "log" else (lambda v: v)
                v = vals[vals > 0] if axis.get_scale() == "log" else vals
                if len(v) and hi > lo and (tr(v.max()) - tr(v.min())) > 0.3 * (tr(hi) - tr(lo)):
                    problems.append(f"the panel {title!r} spreads its data over {name} with one labelled tick "
                                    f"({[s for _, s in ticks]}): one grid point drawn as a range")
        ser = _series(ax)
        for i, (l1, p1, m1, _) in enumerate(ser):  # l1 beneath l2: hidden where l2 covers every point
            for l2, p2, m2, see_through in ser[i + 1:]:
                if see_through or m1 > 1.3 * m2:
                    continue
                d12 = np.hypot(*(p1[:, None, :] - p2[None, :, :]).transpose(2, 0, 1))
                if d12.min(axis=1).max() < 0.3 * m1 + 0.5:
                    problems.append(f"the panel {title!r}: {l2!r} hides {l1!r} (their markers fall on the same pixels)")
    return sorted(set(problems))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_layout(name, size):
    figs = FIGURES[name](size)
    assert figs
    try:
        for fig in figs:
            assert layout_problems(fig) == []
    finally:
        for fig in figs:
            plt.close(fig)


# -- the checker finds each defect ---------------------------------------------------------------
def _bad(kind):
    fig, ax = plt.subplots(1, 2, figsize=(6, 3), layout="constrained")
    for a in ax:
        a.set_xlabel("x")
        a.set_ylabel("y")
        a.plot([1, 2, 3], [1, 2, 3], "o-", label="a")
        a.set_xticks([1, 2, 3])
        a.set_yticks([1, 2, 3])
    if kind == "overlapping text":
        ax[1].set_ylabel("a y label long enough to run past the height of the panel and beyond it")
    elif kind == "legend over data":
        ax[0].plot([1, 3], [3, 1], "s", label="b")
        ax[0].legend(loc="center")
    elif kind == "no label":
        ax[0].set_xlabel("")
    elif kind == "fractional ticks":
        ax[0].set_xticks([1, 1.5, 2, 2.5, 3])
    elif kind == "one point spread":
        ax[0].lines[0].set_data([0.96, 1.0, 1.04], [1, 2, 3])  # three series at one grid point, spread
        ax[0].set_xticks([1.0], ["K=10"])
        ax[0].set_xlim(0.95, 1.05)
    elif kind == "hidden series":
        ax[0].plot([1, 2, 3], [1, 2, 3], "o-", label="b")
    elif kind == "tiny text":
        ax[0].set_title("t", fontsize=5)
    elif kind == "cut off":
        ax[0].set_title("a title far too long for the small figure it is written on, running off its edge")
    return fig


@pytest.mark.parametrize("kind", ["overlapping text", "legend over data", "no label", "fractional ticks",
                                  "one point spread", "hidden series", "tiny text", "cut off"])
def test_the_checker_finds(kind):
    good = _bad("none")
    assert layout_problems(good) == []
    fig = _bad(kind)
    assert layout_problems(fig), kind
    plt.close(fig)
    plt.close(good)


if __name__ == "__main__":  # write every figure, to look at
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "figures")
    out.mkdir(parents=True, exist_ok=True)
    for name, make in FIGURES.items():
        if len(sys.argv) > 2 and not any(w in name for w in sys.argv[2:]):
            continue
        for size in SIZES:
            for i, fig in enumerate(make(size)):
                p = out / f"{name.replace(' ', '_')}_{size}_{i}.png"
                fig.savefig(p, dpi=120, bbox_inches="tight")
                probs = layout_problems(fig)
                print(f"{p.name}: {len(probs)} problems", *[f"\n    {x}" for x in probs[:12]])
                plt.close(fig)
