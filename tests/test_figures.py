"""Every figure function labels its axes and has a legend whose entries are visible, on tiny
synthetic data (matplotlib Agg, nothing is simulated)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402


class FigureCatcher:
    """Stands in for the experiment context: keeps the figures instead of writing them."""

    def __init__(self):
        self.figs = []

    def savefig(self, fig, name="plot"):
        self.figs.append(fig)


def table1_rows():
    return [dict(generator="code", K=1000, algorithm=a, mean=m, se=s, lower_bound=59.4)
            for a, m, s in [("LT&S (no averaging) [paper]", 1389.5, 76.1), ("LT&S (no averaging) [code]", 479.6, 34.6),
                            ("Oracle [code]", 502.4, 26.6)]]


def fig_table1():
    from experiments.seed000_table1 import figure

    return [figure(table1_rows())]


def fig_sensitivity():
    from experiments.design_sensitivity import figure

    om = np.geomspace(0.01, 0.5, 4)
    T, G = 2 / om**2, -4 / om**3
    pred = T[:-1] + G[:-1] * np.diff(om)
    pred_log = T[:-1] * (om[1:] / om[:-1]) ** -2
    sg = np.array([0.5, 1.0, 2.0])
    return [figure(om, sg, sg[:, None] ** 2 * T[None, :] * 2.6, T, G, G * 1.001, pred, pred_log)]


def fig_seed001():
    from experiments.seed001_fig1 import plot

    ctx = FigureCatcher()
    rows = [dict(panel="a", d=d, algorithm=a, mean=m * d, se=5.0, lower_bound=50.0 * d)
            for d in (5, 10) for a, m in (("RAGE", 400), ("XY-static", 900))]
    plot(ctx, rows, [("a", "d", "(a) Soare")], "fig1")
    return ctx.figs


def fig_seed002():
    from experiments.seed002_adaptive import plot_accuracy

    ctx = FigureCatcher()
    rows = [dict(K=k, algorithm=a, accuracy=acc, acc_lo=acc - 0.05, acc_hi=min(1.0, acc + 0.05))
            for k in (8, 16) for a, acc in (("GSE-Lin", 0.9), ("LinUCB", 0.7))]
    plot_accuracy(ctx, rows, "K", "number of arms K", "adaptive instance")
    return ctx.figs


def sweep_rows():
    rng = np.random.default_rng(0)
    recs = []
    for alg in ("RAGE", "LT&S"):
        for K in (10, 100):
            for j in range(3):
                for i in range(4):
                    recs.append(dict(algorithm=alg, K=K, instance=j, rep=i, samples=int(rng.integers(100, 200)),
                                     correct=True, stopped=True, lower_bound=50.0))
    return pd.DataFrame(recs)


def fig_sweep_complexity():
    from jaxbandits.sweeps import plot_sample_complexity

    return [plot_sample_complexity(sweep_rows(), "K").figure]


def fig_sweep_error():
    from jaxbandits.sweeps import plot_error_rate

    return [plot_error_rate(sweep_rows(), "K", delta=0.05).figure]


def fig_sweep_ratio():
    from jaxbandits.sweeps import plot_ratio_distribution

    return [plot_ratio_distribution(sweep_rows()).figure]


#: figure function -> whether it must have a legend (a box plot names its boxes on the axis)
FIGURES = {"seed000_table1": (fig_table1, True), "design_sensitivity": (fig_sensitivity, True),
           "seed001_fig1": (fig_seed001, True), "seed002_adaptive.plot_accuracy": (fig_seed002, True),
           "sweeps.plot_sample_complexity": (fig_sweep_complexity, True),
           "sweeps.plot_error_rate": (fig_sweep_error, True),
           "sweeps.plot_ratio_distribution": (fig_sweep_ratio, False)}


def check_figure(fig, need_legend: bool) -> None:
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert axes
    for ax in axes:
        assert ax.get_xlabel().strip(), "an axis without an x label"
        assert ax.get_ylabel().strip() or ax.get_yticklabels(), "an axis without a y label"
        if ax.get_ylabel().strip() == "":
            assert any(t.get_text() for t in ax.get_yticklabels()), "an axis without a y label"
    legends = [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    if need_legend:
        assert legends, "no legend"
    for leg in legends:
        assert leg.get_texts()[0].get_fontsize() >= 7, "legend font below 7 pt"
        for h in leg.legend_handles:
            # every entry is drawn: a marker, or a line with a width
            lines = [h] if isinstance(h, matplotlib.lines.Line2D) else \
                [c for c in getattr(h, "get_children", lambda: [])() if isinstance(c, matplotlib.lines.Line2D)]
            if lines:
                assert any((ln.get_marker() not in (None, "None", "", " ")) or
                           (ln.get_linestyle() not in ("None", "", " ") and ln.get_linewidth() > 0)
                           for ln in lines), "a legend entry shows nothing"


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_labels_and_legend(name):
    make, need_legend = FIGURES[name]
    figs = make()
    assert figs
    for fig in figs:
        check_figure(fig, need_legend)
        plt.close(fig)


def test_check_figure_catches_a_bare_plot():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    with pytest.raises(AssertionError):
        check_figure(fig, True)
    plt.close(fig)
