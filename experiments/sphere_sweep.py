"""How far from optimal is each fixed-confidence algorithm across random instances?  A sweep over
d in {2, 5, 10, 20} and K in {10, 100, 1000}, 100 random unit-sphere instances per (d, K), every
fixed-confidence best-arm algorithm of the library at delta in {0.05, 0.01}: the distribution over
instances of E[tau] / lower bound, the figure no seed paper shows.

Written on the sweep API only (:func:`jaxbandits.sweep`, :mod:`jaxbandits.sweeps`): rows per
replication in ``sweep/rows.csv`` (resumable), T* per instance in ``sweep/instances.csv``, the
summary per (algorithm, d, K, delta) and per-instance ratios as CSV and Markdown, box plots.

Instances (:func:`jaxbandits.instances.seeds.sphere_calibrated`): arms uniform on the sphere,
theta a uniform direction, the noise scaled so that sigma^2 T*(theta) = 1000 on every instance
(lower bound 1000 kl(delta, 1 - delta)); with a fixed noise, random directions in low dimension
with many arms have gaps ~1e-5 and the grid is infeasible.  The ratio E[tau] / LB of a sigma-aware
algorithm does not depend on that scaling.

Shapes: the sweep pads every algorithm to its shape bucket (:class:`jaxbandits.Buckets`, K = 10,
100, 1000 -> 16, 128, 1024; the table keeps the real K), so the programs are one per (algorithm,
d, bucket, delta).

Defaults: 2 replications per instance (the per-instance E[tau] is then an average of 2; the spread
over 100 instances dominates), step cap 2e6 (capped runs stay in the table and are counted:
``ratio_at_least`` is then the valid figure).  ``--quick``: d in {2, 5}, K = 10, 4 instances,
three algorithms, delta = 0.05.
"""
from __future__ import annotations

NAME = "sphere_sweep"
DESCRIPTION = "Sweep: every fixed-confidence algorithm on random sphere instances, d x K x delta, E[tau]/LB distribution"

HARDNESS = 1000.0
CAP = 2_000_000


def algorithms(quick: bool) -> dict:
    from jaxbandits.algorithms import (ALBA, RAGE, LazyTrackAndStop, LinGapE, Oracle, UniformGLR, XYAdaptive,
                                       XYOracle, XYStatic)

    if quick:
        return {"RAGE": RAGE(), "LinGapE": LinGapE(), "uniform + GLR": UniformGLR()}
    return {"LT&S": LazyTrackAndStop(), "LT&S (no averaging)": LazyTrackAndStop(averaging=False),
            "RAGE": RAGE(), "XY-static": XYStatic(), "XY-oracle": XYOracle(), "XY-adaptive": XYAdaptive(),
            "ALBA": ALBA(), "LinGapE": LinGapE(), "Oracle": Oracle(), "uniform + GLR": UniformGLR()}


def run(ctx):
    import jaxbandits as jb
    from jaxbandits.instances import seeds
    from jaxbandits.sweeps import per_instance_ratio, plot_ratio_distribution, summary

    quick = ctx.quick
    grid = {"dim": [2, 5], "num_arms": [10]} if quick else {"dim": [2, 5, 10, 20], "num_arms": [10, 100, 1000]}
    n_inst = 4 if quick else 100
    deltas = [0.05] if quick else [0.05, 0.01]
    reps = ctx.reps or 2
    algs = algorithms(quick)
    gen = jb.Generator("sphere", seeds.sphere_calibrated, grid, n_instances=n_inst, fixed=dict(hardness=HARDNESS))
    ctx.config.update(grid=grid, instances=n_inst, deltas=deltas, reps=reps, hardness=HARDNESS, cap=CAP,
                      algorithms=list(algs))
    df = jb.sweep(algs, gen, deltas=deltas, n_reps=reps, key=ctx.key, max_steps=CAP, out=ctx.out / "sweep",
                  progress=not ctx.quiet)
    by = ["algorithm", "dim", "num_arms", "delta"]
    s = summary(df, by)
    s.to_csv(ctx.out / "summary.csv", index=False)
    ratios = per_instance_ratio(df, by)
    ratios.to_csv(ctx.out / "per_instance.csv", index=False)
    q = ratios.groupby(by, sort=False)["ratio"].quantile([0.1, 0.5, 0.9]).unstack()
    q.columns = ["ratio_q10", "ratio_median", "ratio_q90"]
    s = s.merge(q.reset_index(), on=by)
    cols = by + ["runs", "frac_capped", "mean", "se", "lower_bound", "ratio", "ratio_at_least", "ratio_q10",
                 "ratio_median", "ratio_q90", "error_rate", "error_lo", "error_hi"]
    ctx.table(s[cols].to_dict("records"), "summary",
              title="E[tau] / lower bound per (algorithm, d, K, delta); quantiles over instances")

    import matplotlib.pyplot as plt

    for delta in deltas:
        sub = df[df["delta"] == delta]
        pts = list(dict.fromkeys(zip(sub["dim"], sub["num_arms"])))
        fig, axes = plt.subplots(len(pts), 1, figsize=(8, 2.2 + 0.35 * len(algs) * len(pts)), squeeze=False)
        for ax, (d, K) in zip(axes[:, 0], pts):
            plot_ratio_distribution(sub[(sub["dim"] == d) & (sub["num_arms"] == K)], ax=ax)
            ax.set_title(f"d = {d}, K = {K}, delta = {delta}", fontsize="small")
        fig.tight_layout()
        ctx.savefig(fig, f"ratio_delta{delta}")
