"""Seed 003 Fig. 1(c) / Table 3 column (1)c on real data: Top-m identification over the rows of a
feature table, comparing the linear algorithms with their feature-free counterparts.

The paper's drug-repurposing instance (K = 10 drugs, 71 gene-activity features, m = 5, rewards from
a Boolean-network simulator) needs data and a simulator that cannot be installed here.  This
experiment runs the same protocol on any user-supplied table through
:func:`jaxbandits.instances.data.from_data` (arms = rows, features rescaled to [0, 1], theta fitted
by ridge regression, Gaussian rewards around the linear fit):

* ``JAXBANDITS_FEATURES=path.csv JAXBANDITS_TARGET=column python -m experiments seed003_real_data``
  (optional ``JAXBANDITS_NOISE``, default 0.5; ``JAXBANDITS_M``, default 5; ``JAXBANDITS_K``,
  default 10 rows drawn at random), or :func:`run_on_table` from Python.

Without a user table it demonstrates on a real dataset that ships with matplotlib (a required
dependency, so no extra install): ``mpl-data/sample_data/Stocks.csv`` (monthly closing prices
1990-2017, finance.yahoo.com).  Arms = months; features = the month's log-returns of IBM, AAPL,
MSFT, XRX, ADBE and the NASDAQ index; target = the S&P 500 log-return (standardised); K = 10
months, 5 drawn among the 60-90% and 5 among the 10-40% quantile bands of fitted values (as the
paper's 5 anti-epileptic and 5 pro-convulsant drugs), m = 5, sigma = 1/2 (rewards are simulated around the fitted linear model: a
well-specified stand-in for the paper's simulator).  Settings otherwise as Sec 5 (delta = 5%,
epsilon = 0, lambda = sigma/20, heuristic threshold as the paper used for Fig. 1(c)).
Algorithms of Table 3 column (1)c: m-LinGapE (greedy, optimized), LinGIFA (largest variance,
greedy), LUCB (largest variance, sampling both arms).  Each runs as in the paper (Algorithm 1) and
as in the released code (:meth:`~jaxbandits.algorithms.top_m.gifa.GIFA.released_code`; with the heuristic
threshold only its pre-pull stopping pair matters), rows side by side; there are no reference
numbers for this stand-in instance.

Measured (``--reps 200``, seed 0; K = 10, d = 6, m = 5, gap mu_5 - mu_6 = 0.39; 3.5 min), mean +- SE,
errors: m-LinGapE greedy 136.1 +- 3.3, 0/200 (paper) vs 92.9 +- 2.9, 5/200 = 2.5% [0.8%, 5.7%]
(released code; q05 = 23, i.e. stops a few pulls after the initialization); m-LinGapE optimized
139.6 +- 2.9, 0 vs 98.5 +- 3.3, 2/200; LUCB (largest variance) 369.6 +- 6.7, 0 vs 258.9 +- 6.8, 1/200;
LUCB (both) 348.1 +- 6.6 vs 244.2 +- 6.9, 0 errors; LinGIFA (tau_UGapE, pre-pull = one extra sample)
largest variance 138.0 +- 3.0 vs 136.6 +- 3.3, greedy 128.8 +- 2.9 vs 130.1 +- 2.7, 0 errors.  With
m = 5 the pre-pull check (one old pair out of m (K - m) = 25) is ~30% cheaper and errs.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

NAME = "seed003_real_data"
DESCRIPTION = "Seed 003 Fig. 1(c) protocol on a real feature table (default: matplotlib's Stocks.csv)"


def stocks_table():
    """Monthly log-returns (features) and S&P 500 log-return (target) from matplotlib's Stocks.csv."""
    import matplotlib
    path = Path(matplotlib.get_data_path()) / "sample_data" / "Stocks.csv"
    with open(path) as f:
        lines = [ln for ln in f.read().splitlines() if ln and not ln.startswith("#")]
    header = lines[0].split(",")
    rows = [ln.split(",") for ln in lines[1:]]
    cols = ["IBM", "AAPL", "MSFT", "XRX", "ADBE", "^IXIC", "^GSPC"]
    idx = [header.index(c) for c in cols]
    vals = np.array([[float(r[i]) if r[i] else np.nan for i in idx] for r in rows])
    vals = vals[np.all(np.isfinite(vals), axis=1)]
    ret = np.diff(np.log(vals), axis=0)
    return ret[:, :-1], ret[:, -1], str(path)


def algorithms(m, delta, threshold="heuristic"):
    from jaxbandits.algorithms.top_m import gifa
    return [gifa.MLinGapE(m, delta, selection="greedy", threshold=threshold),
            gifa.MLinGapE(m, delta, selection="optimized", threshold=threshold),
            gifa.LinGIFA(m, delta, selection="largest_variance", threshold=threshold),
            gifa.LinGIFA(m, delta, selection="greedy", threshold=threshold),
            gifa.LUCB(m, delta, threshold=threshold),
            gifa.LUCB(m, delta, selection="both", threshold=threshold)]


def run_on_table(ctx, features, targets, *, source: str, m: int = 5, num_arms: int = 10, noise: float = 0.5,
                 delta: float = 0.05, reps: int = 500):
    import jax

    from experiments.seed003_fig1 import summarize, violin
    from jaxbandits.instances.data import from_data
    from jaxbandits.instances.base import make_instance
    y = np.asarray(targets, float)
    y = (y - y.mean()) / y.std()  # standardised target: means on the scale of sigma
    full = from_data(np.asarray(features, float), y, noise=noise)
    # like the paper's 5 anti-epileptic + 5 pro-convulsant drugs: half the arms drawn among the rows
    # fitted value in the 60-90% quantile band, half in the 10-40% band (seeded)
    v = np.asarray(full.arm_means())
    rng = np.random.default_rng(int(ctx.seed) + 12345)
    q = lambda a: np.quantile(v, a)
    hi = rng.choice(np.flatnonzero((v >= q(0.6)) & (v <= q(0.9))), num_arms - num_arms // 2, replace=False)
    lo = rng.choice(np.flatnonzero((v >= q(0.1)) & (v <= q(0.4))), num_arms // 2, replace=False)
    rows = np.sort(np.concatenate([hi, lo]))
    inst = make_instance(np.asarray(full.arms)[rows], full.theta, noise)
    mu = np.sort(np.asarray(inst.arm_means()))[::-1]
    ctx.log(f"instance from {source}: K = {inst.num_arms}, d = {inst.dim}, m = {m}, "
            f"gap mu_m - mu_(m+1) = {mu[m - 1] - mu[m]:.4g}")
    ctx.config.update(dict(source=source, K=inst.num_arms, d=inst.dim, m=m, noise=noise, delta=delta,
                           gap=float(mu[m - 1] - mu[m])))
    algs = algorithms(m, delta)
    if ctx.quick:
        algs = algs[:1]
    from experiments.seed003_fig1 import DIFFERENCE
    rows, data = [], {}
    for alg in algs:
        for mode, a in (("paper", alg), ("released code", alg.released_code())):
            res = ctx.simulate(dict(source=source, algorithm=a.name), a, inst, reps, 5_000_000)
            rows.append(summarize(a.name, res, delta, mode=mode))
            data[a.name] = res.samples.ravel()[res.stopped.ravel()]
    ctx.table(rows, "fig1c", f"Fig. 1(c) protocol on {source} (K={inst.num_arms}, m={m}). "
              + DIFFERENCE.split("; the references")[0] + ".")
    violin(ctx, data, f"Top-{m} on {source}", "fig1c")
    return rows


def run(ctx):
    reps = ctx.n_reps(500, 10)
    path = os.environ.get("JAXBANDITS_FEATURES")
    if path:
        from jaxbandits.instances.data import load_table
        X, y, _ = load_table(path, target=os.environ.get("JAXBANDITS_TARGET"))
        return run_on_table(ctx, X, y, source=path, m=int(os.environ.get("JAXBANDITS_M", 5)),
                            num_arms=int(os.environ.get("JAXBANDITS_K", 10)),
                            noise=float(os.environ.get("JAXBANDITS_NOISE", 0.5)), reps=reps)
    X, y, path = stocks_table()
    return run_on_table(ctx, X, y, source="matplotlib Stocks.csv (monthly returns)", reps=reps)
