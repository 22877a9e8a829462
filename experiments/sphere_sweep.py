"""How far from optimal is each fixed-confidence algorithm across random instances?  A sweep over
d in {2, 5, 10, 20} and K in {10, 100, 1000}, 100 random unit-sphere instances per (d, K), every
fixed-confidence best-arm algorithm of the library at delta in {0.05, 0.01}: the distribution over
instances of E[tau] / lower bound, the figure no seed paper shows.

Written on the sweep API only (:func:`jaxbandits.sweep`, :mod:`jaxbandits.sweeps`): rows per
replication in ``sweep/rows.csv`` (resumable), T* per instance in ``sweep/instances.csv``, the
summary per (algorithm, d, K, delta) and per-instance ratios as CSV and Markdown, box plots.

Instances (:func:`jaxbandits.instances.seeds.sphere_calibrated`): arms uniform on the sphere,
theta a uniform direction, the noise scaled so that sigma^2 T*(theta) = HARDNESS on every instance
(lower bound HARDNESS kl(delta, 1 - delta)); with a fixed noise, random directions in low dimension
with many arms have gaps ~1e-5 and the grid is infeasible.  The ratio E[tau] / LB of a sigma-aware
algorithm does not depend on that scaling, except through what does not scale with it: the
initial pull of every arm (K pulls) and the phase structure.  HARDNESS = 100 (LB = 265 at delta =
0.05, 450 at 0.01) keeps the grid within hours on 2 CPU cores; at K = 1000 an algorithm that pulls
every arm once starts at 2.2-3.8 x LB, which the figure shows as it is.

Shapes: the sweep pads every algorithm to its shape bucket (:class:`jaxbandits.Buckets`, K = 10,
100, 1000 -> 16, 128, 1024; the table keeps the real K), so the programs are one per (algorithm,
d, bucket); delta is a traced argument (one program for both deltas).

What runs where (the full grid is a GPU job; on 2 CPU cores it is cut where stated):

* K in {10, 100}: 100 instances x ``reps`` (default 2) replications;
* K = 1000: ``JAXBANDITS_SPHERE_K1000_INSTANCES`` instances (default 10) x 1 replication;
* no (d = 20, K = 10) cell: 10 arms cannot span R^20, every least-squares algorithm refuses such
  an instance (``needs_span``), and it is a 10-dimensional problem in disguise;
* XY-adaptive only at K = 10: its greedy pull evaluates ||y||^2 under every rank-one update, K x
  K(K-1)/2 terms per pull (5e5 at K = 100, 5e8 at K = 1000; on the sphere every arm is a vertex
  of the hull, so no direction can be pruned); measured: 2 replications at K = 100, d = 5 did not
  finish in 10 minutes.  ``JAXBANDITS_SPHERE_XY_ADAPTIVE_MAX_K`` raises the limit.

``JAXBANDITS_ALGORITHMS`` (comma-separated names) runs a subset; ``JAXBANDITS_SWEEP_RESUME_ONLY=1``
runs nothing and makes the tables and figures from the configurations complete on disk.  Step cap 1e5 per-pull steps
(222 x LB at delta = 0.01, 377 x at 0.05: uniform sampling needs more than that on most d = K =
10 instances, where the arms are badly conditioned, and the 2e6 cap first tried took an hour per
such cell on 2 cores),
``PHASE_CAPS`` phases for the phase-based algorithms (capped runs stay in the table and are
counted: ``ratio_at_least`` is then the valid figure).  ``--quick``: d in
{2, 5}, K = 10, 4 instances, three algorithms, delta = 0.05.
"""
from __future__ import annotations

NAME = "sphere_sweep"
DESCRIPTION = "Sweep: every fixed-confidence algorithm on random sphere instances, d x K x delta, E[tau]/LB distribution"

HARDNESS = 100.0
CAP = 100_000
# phase-based algorithms take one step per phase, and the phase lengths grow geometrically
# (XY-static: ceil(1.35^t) pulls in round t): a run that reaches these caps will never stop
PHASE_CAPS = {"RAGE": 60, "XYStatic": 400, "XYOracle": 1200, "ALBA": 2000, "Oracle": 400}


def step_cap(alg, instances) -> int:
    return PHASE_CAPS.get(type(alg).__name__, CAP)


def algorithms(quick: bool) -> dict:
    import os

    from jaxbandits.algorithms import (ALBA, FWS, RAGE, LazyTrackAndStop, LinGame, LinGapE, Oracle, TopTwo,
                                       UniformGLR, XYAdaptive, XYOracle, XYStatic)

    if quick:
        return {"RAGE": RAGE(), "LinGapE": LinGapE(), "uniform + GLR": UniformGLR()}
    algs = {"LT&S": LazyTrackAndStop(), "RAGE": RAGE(), "XY-static": XYStatic(), "XY-oracle": XYOracle(),
            "XY-adaptive": XYAdaptive(), "ALBA": ALBA(), "Oracle": Oracle(), "uniform + GLR": UniformGLR(),
            "LinGame": LinGame(), "FWS": FWS(), "TopTwo": TopTwo(), "LinGapE": LinGapE()}
    only = os.environ.get("JAXBANDITS_ALGORITHMS")
    if only:
        keep = [n.strip() for n in only.split(",")]
        algs = {n: a for n, a in algs.items() if n in keep}
    return algs


def run(ctx):
    import os

    import pandas as pd

    import jaxbandits as jb
    from jaxbandits.instances import seeds
    from jaxbandits.sweeps import per_instance_ratio, summary

    quick = ctx.quick
    ks, dims = ([10], [2, 5]) if quick else ([10, 100, 1000], [2, 5, 10, 20])
    n_inst = 4 if quick else 100
    n_large = int(os.environ.get("JAXBANDITS_SPHERE_K1000_INSTANCES", "10"))
    xy_max_k = int(os.environ.get("JAXBANDITS_SPHERE_XY_ADAPTIVE_MAX_K", "10"))
    deltas = [0.05] if quick else [0.05, 0.01]
    reps = ctx.reps or 2
    algs = algorithms(quick)
    fixed = dict(hardness=HARDNESS)
    # K = 1000 first (fewer instances, one replication), then num_arms outermost: every algorithm at
    # K = 10, then K = 100
    small = [k for k in ks if k < 1000]
    runs = [(jb.Generator("sphere", seeds.sphere_calibrated, {"num_arms": small, "dim": dims}, n_instances=n_inst,
                          fixed=fixed), reps)]
    if 1000 in ks:
        runs.insert(0, (jb.Generator("sphere", seeds.sphere_calibrated, {"num_arms": [1000], "dim": dims},
                                     n_instances=n_large, fixed=fixed), 1))
    # JAXBANDITS_SWEEP_RESUME_ONLY=1: tables and figures from what is on disk, nothing run
    resume_only = os.environ.get("JAXBANDITS_SWEEP_RESUME_ONLY", "0") == "1"

    def where(name, params):
        if params["num_arms"] < params["dim"]:  # K = 10 arms cannot span R^20
            return False
        return name != "XY-adaptive" or params["num_arms"] <= xy_max_k

    ctx.config.update(K=ks, d=dims, instances=n_inst, instances_K1000=n_large, deltas=deltas, reps=reps,
                      reps_K1000=1, hardness=HARDNESS, cap=CAP, phase_caps=PHASE_CAPS, algorithms=list(algs), xy_adaptive_max_K=xy_max_k)
    df = pd.concat([ctx.sweep(algs, gen, deltas=deltas, n_reps=r, key=ctx.key, max_steps=step_cap, out=ctx.out / "sweep",
                             progress=None if not ctx.quiet else False, where=where, resume_only=resume_only) for gen, r in runs],
                   ignore_index=True)
    ctx.write_rows(df, "rows")
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

    for delta in deltas:
        # the distribution over instances as a table: median (q10-q90) per algorithm x (d, K)
        piv = s[s["delta"] == delta].copy()
        piv["cell"] = [f"{m:.3g} ({a:.3g}-{b:.3g})" for m, a, b in
                       zip(piv["ratio_median"], piv["ratio_q10"], piv["ratio_q90"])]
        piv["point"] = [f"d={d}, K={k}" for d, k in zip(piv["dim"], piv["num_arms"])]
        order = [f"d={d}, K={k}" for k in ks for d in dims]
        tab = piv.pivot(index="algorithm", columns="point", values="cell")
        tab = tab[[c for c in order if c in tab.columns]].reindex([a for a in algs if a in tab.index])
        ctx.table([dict(algorithm=a, **row) for a, row in tab.fillna("-").to_dict("index").items()],
                  f"median_delta{delta}", title=f"delta = {delta}: per-instance E[tau] / lower bound, "
                  "median (10 %-90 % quantiles) over instances")
        ctx.savefig(figure(df[df["delta"] == delta], dims, ks, len(algs), delta), f"ratio_delta{delta}")


def figure(sub, dims, ks, n_algs: int, delta: float):
    """Per-instance E[tau] / lower bound of each algorithm (box plots), one panel per (d, K), every
    panel with the same rows (an algorithm not run at a point leaves its row empty; a point with no
    runs says so); ``sub``: the replication rows at one delta."""
    from experiments._figures import log_ticks_plain, new_figure
    from jaxbandits.sweeps import plot_ratio_distribution

    order = list(dict.fromkeys(sub["algorithm"]))
    fig, axes = new_figure(len(dims), len(ks), panel=(3.6, 0.24 * max(n_algs, len(order)) + 0.9), extra=(1.0, 0.6),
                           sharex=True, sharey=True)
    for i, d in enumerate(dims):
        for j, K in enumerate(ks):
            ax = axes[i, j]
            cell = sub[(sub["dim"] == d) & (sub["num_arms"] == K)]
            plot_ratio_distribution(cell, ax=ax, order=order)
            if not len(cell):
                ax.text(0.5, 0.5, "not run", transform=ax.transAxes, ha="center", va="center", color="grey")
            ax.axvline(1.0, color="grey", lw=0.8, ls="--")
            log_ticks_plain(ax.xaxis)
            ax.set_title(f"d = {d}, K = {K}", fontsize="medium")
            ax.tick_params(which="both", labelsize=7.5)
            ax.set_xlabel("")
            ax.set_ylabel("")
    fig.supxlabel("E[tau] / lower bound per instance (dashed line: 1)")
    fig.supylabel("algorithm")
    fig.suptitle(f"Unit-sphere instances, delta = {delta}")
    return fig
