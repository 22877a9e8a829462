"""Seed 002 App E.2 (Fig. 5) mirrored on a real dataset that ships with a required dependency:
matplotlib's ``sample_data/Stocks.csv`` (monthly closing prices from Yahoo! Finance, 1990-2022).

Arms are months; features are the rescaled ([0, 1], as App E.2) prices of IBM, AAPL, MSFT, XRX and
ADBE (d = 5, like the Automobile data's 5 features); the target is the S&P 500 level (^GSPC),
rescaled to [0, 1]; the task is to find the month with the highest S&P 500 from noisy samples.
As in App E.2, every replication samples K months; rewards are N(mean, 0.1^2) around the best
linear fit of the target (:func:`jaxbandits.instances.data.from_data`; App E.2 samples around
the raw targets, which the linear instance approximates -- a misspecified linear model either way).
The Automobile / Electric-Motor data of the paper are not bundled with any required package (scikit-
learn is not a dependency), so they are not used.

Default: K in {8, 16, 32} (App E.2 shows a K sweep), B = 50 K, 100 subsamples x 10 reps per
point, LinGapE's delta from the three-value grid of ``seed002_adaptive.SWEEP_DELTAS``.  K = 64 is
left out of the default to keep the run within minutes on 2 shared CPU cores (its per-pull
baselines dominate the cost).
"""
from __future__ import annotations

NAME = "seed002_real_data"
DESCRIPTION = "Seed 002 App E.2 mirror: matplotlib's Stocks.csv, find the month of highest S&P 500"

FEATURES = ["IBM", "AAPL", "MSFT", "XRX", "ADBE"]
TARGET = "^GSPC"
ALGORITHMS = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "OD-LinBAI", "LinUCB", "LinGapE",
              "BayesGap-Lin", "Peace"]


def load_stocks():
    """(features [n, 5], target [n]) from matplotlib's bundled Stocks.csv (rows with all values)."""
    import matplotlib.cbook as cbook
    import numpy as np

    path = cbook.get_sample_data("Stocks.csv", asfileobj=False)
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    header = lines[0].strip().split(",")
    cols = [header.index(c) for c in FEATURES + [TARGET]]
    rows = []
    for ln in lines[1:]:
        parts = ln.strip().split(",")
        vals = [parts[c] for c in cols]
        if all(v != "" for v in vals):
            rows.append([float(v) for v in vals])
    a = np.asarray(rows)
    return a[:, :-1], a[:, -1]


def run(ctx):
    import jax

    from experiments.seed002_adaptive import SWEEP_DELTAS, best_of_grid, plot_accuracy, run_point
    from jaxbandits.instances import seeds
    from jaxbandits.instances.data import from_data, rescale_unit, subsample

    X, y = load_stocks()
    y = rescale_unit(y[:, None])[:, 0]
    full = from_data(X, y, noise=0.1)
    q = ctx.quick
    Ks = [8] if q else [8, 16, 32]
    bpk = 50
    names = ["GSE-Lin-FWG", "LinUCB"] if q else ALGORITHMS
    n_inst = 4 if q else 100
    reps = ctx.n_reps(10, 5)
    ctx.config.update(dataset="matplotlib sample_data/Stocks.csv", rows=int(X.shape[0]), features=FEATURES,
                      target=TARGET, noise=0.1, budget_per_arm=bpk, Ks=Ks, instances_per_point=n_inst,
                      reps_per_instance=reps)
    rows = []
    for K in Ks:
        inst = seeds.batch(subsample, jax.random.fold_in(ctx.key, K), n_inst, instance=full, num_arms=K)
        run_point(ctx, rows, dict(K=K, B=bpk * K), names, inst, bpk * K, K, X.shape[1], reps,
                  lingape_deltas=(0.1,) if q else SWEEP_DELTAS)
    rows = best_of_grid(rows, "K")
    ctx.table(rows, "summary", f"Stocks.csv (S&P 500 month), B = {bpk} K, {n_inst} subsamples x {reps} reps")
    plot_accuracy(ctx, rows, "K", "number of arms K (months)", f"Stocks.csv: month of highest S&P 500, B = {bpk}K", logx=True)
