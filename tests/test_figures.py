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


def fig_hardest_theta():
    from experiments.design_hardest_theta import figure

    rows = [dict(arms=a, H_gradient=g, H_random=r, H_random_then_ascent=b, median_H_random=m)
            for a, g, r, b, m in [("Soare", 3.1, 2.4, 3.2, 1.2), ("unit sphere", 5.0, 4.1, 5.2, 1.9)]]
    return [figure(rows, n_starts=4, n_random=2000)]


def fig_probe_set():
    from experiments.design_probe_set import figure

    rng = np.random.default_rng(0)
    logs = {n: rng.normal(c, 0.3, 16) for n, c in (("learned", 3.0), ("basis", 3.4), ("random", 3.8))}
    per_theta = {n: np.exp(v[:5]) * 20 for n, v in logs.items()}
    return [figure(np.log(np.linspace(60, 20, 30)), [(0, 55.0), (29, 21.0)], logs, per_theta, n_test=16, n_val=5)]


def fig_modern_vs_seeds():
    from experiments.modern_vs_seeds import figure

    s = pd.DataFrame([dict(generator=g, point=p, algorithm=a, ratio=r if a != "LinGame" else np.nan,
                           ratio_at_least=r, ratio_se=0.1 * r)
                      for g in ("soare", "sphere") for p in ("d=2, K=3", "d=5, K=10")
                      for a, r in (("RAGE", 3.0), ("LT&S", 1.5), ("LinGame", 6.0))])
    return [figure(s)]


def fig_seed003_violin():
    from experiments.seed003_fig1 import violin_figure

    rng = np.random.default_rng(0)
    return [violin_figure({"m-LinGapE": rng.gamma(5, 50, 40), "LinGIFA": rng.gamma(5, 40, 40)}, "classic, m = 2")]


def fig_sphere_sweep():
    from experiments.sphere_sweep import figure

    df = sweep_rows().rename(columns={"K": "num_arms"})
    df["dim"] = np.where(df["instance"] % 2 == 0, 2, 5)
    df["delta"] = 0.05
    return [figure(df, [2, 5], [10, 100], 2, 0.05)]


#: figure function -> whether it must have a legend (a box plot names its boxes on the axis)
FIGURES = {"seed000_table1": (fig_table1, True), "design_sensitivity": (fig_sensitivity, True),
           "seed001_fig1": (fig_seed001, True), "seed002_adaptive.plot_accuracy": (fig_seed002, True),
           "sweeps.plot_sample_complexity": (fig_sweep_complexity, True),
           "sweeps.plot_error_rate": (fig_sweep_error, True),
           "sweeps.plot_ratio_distribution": (fig_sweep_ratio, False),
           "design_hardest_theta": (fig_hardest_theta, True), "design_probe_set": (fig_probe_set, True),
           "modern_vs_seeds": (fig_modern_vs_seeds, True), "seed003_fig1.violin": (fig_seed003_violin, False),
           "sphere_sweep": (fig_sphere_sweep, False)}


def check_figure(fig, need_legend: bool) -> None:
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert axes
    for ax in axes:
        # panels sharing their x axis may leave the label to one of them (the bottom row)
        shared = ax.get_shared_x_axes().get_siblings(ax)
        assert any(a.get_xlabel().strip() for a in shared), "an axis without an x label"
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
