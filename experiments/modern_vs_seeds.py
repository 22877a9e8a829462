"""Every fixed-confidence best-arm algorithm of the library, the seeds' and the modern ones, side
by side: mean sample complexity over the lower bound sigma^2 T*(theta)
kl(delta, 1 - delta) (seed 000 Thm 1), with standard errors, error rates (Clopper-Pearson 95 %),
and replications per second, on three families:

* ``soare``: Soare et al.'s benchmark X = Z = {e_1..e_d, cos(w) e_1 + sin(w) e_2}, theta = e_1, over
  d in {2, 4, 6, 8, 10}, with w = 0.1: the "usual hard instance" of the modern papers (LinGame,
  Degenne et al. 2020; the elimination paper's ``hard_linear.jl``, d = 2), gap 1 - cos 0.1 = 0.005.
  Seed 001 Fig. 1a uses w = 0.01, theta = 2 e_1 (lower bound 53.5k pulls at delta = 0.05 for every
  d, i.e. ~1e6 pulls per run for the GLR-threshold algorithms): that one stays in
  ``seed001_fig1``; ``SOARE`` below switches this experiment to it.
* ``many_arms``: K = 1000 arms in d = 2, seed 001's released-code instance (seed 000 Table 1):
  :func:`seeds.many_arms_code`, one fresh instance per instance index.
* ``sphere``: random unit-sphere instances (arms and theta uniform, d = 5, K = 50), noise scaled so
  that sigma^2 T* = 1000 on each (:func:`seeds.sphere_calibrated`, as ``sphere_sweep``).

Algorithms: LT&S (seed 000), RAGE, XY-static, XY-oracle, XY-adaptive, ALBA, the Oracle (seed 001),
LinGapE (seed 003 / Xu et al.), the uniform GLR; LT&S and the uniform GLR with elimination at
stopping and at sampling (Tirinzoni & Degenne 2022, :class:`jaxbandits.algorithms.Eliminate`); and
LinGame, FWS and TopTwo (with and without elimination) when the library has them
(``jaxbandits.algorithms``; looked up by name, so they join the table as they land).  delta = 0.05.

Published numbers on the same instances: the modern papers' tables could not be read from the
stored corpus (only their abstracts), so the ``published`` column is empty; nothing here is tuned
toward any number.

Written on the sweep API (:func:`jaxbandits.sweep`): per-replication rows in ``sweep/rows.csv``
(resumable), T* per instance in ``sweep/instances.csv``, ``summary.md`` / ``summary.csv``, the
figure ``ratio.png``.  Each algorithm is swept on its own to time it (wall seconds, including
compilation; ``reps_per_s`` = replications / seconds).  Paired sweep (``paired=True``): every
algorithm runs on the same replication keys, so "LT&S + elim (stopping)" sees exactly LT&S's
observations and stops no later, run by run.  Defaults (2 CPU cores): 10 replications per
Soare point, 5 many-arms instances x 2 replications, 10 sphere instances x 2 replications, step cap
2e6 (capped runs stay in the table: ``ratio`` is then NaN and ``ratio_at_least`` is the valid
figure).  ``--quick``: d = 2 only, 1 many-arms instance, 2 sphere instances, 4 algorithms, 4
replications, cap 2e5.

Measured (reduced run, 2 shared CPU cores, ~25 min in all, resumed twice: every algorithm,
Soare d in {2, 6, 10} x 4 replications, many arms 2 instances x 2, sphere 4 instances x 1, cap
5e5 steps, paired keys; XY-adaptive skipped at K = 1000, see ``SKIP``).  E[tau] / lower bound
(SE), no errors in any row (Clopper-Pearson upper bounds 0.60 with 4 runs):

  algorithm            soare d=2    d=6          d=10          many K=1000   sphere d=5 K=50
  LT&S                 27.4 (2.4)   43.4 (3.2)   52.1 (3.5)    29.8 (2.2)    52.0 (2.8)
  LT&S + elim (stop)   27.4 (2.4)   43.4 (3.2)   52.1 (3.5)    29.8 (2.2)    52.0 (2.8)
  LT&S + elim (samp)   27.4 (2.4)   39.1 (3.8)   45.4 (1.4)    29.8 (2.2)    52.0 (2.8)
  RAGE                 15.1 (6.5)   17.9 (7.6)   11.3 (0)      28.1 (11.7)   26.1 (8.0)
  XY-static            10.6 (1.9)   33.8 (10.2)  57.6 (9.7)    31.0 (2.7)    17.7 (2.4)
  XY-oracle / Oracle   5.42 (0.55)  7.44 (0.59)  8.31 (0.64)   6.77 / 7.23   6.56 (1.27)
  XY-adaptive          15.9 (3.2)   14.1 (0.03)  22.4 (0.14)   not run       28.0 (3.4)
  ALBA                 63.7 (11.5)  64.8 (6.3)   75.7 (3.1)    162 (11)      662 (243)
  LinGapE              5.24 (0.40)  12.0 (1.6)   14.5 (1.0)    19.7 (0.5)    11.9 (0.9)
  uniform + GLR (+elim) 23.1 (4.4)  173 (5)      >= 210 (cap)  1811 (278)    50.5 (10.3)

  LinGame              1.55 (0.45)  4.40 (1.72)  7.98 (1.23)   17.6 (0.15)   1.88 (0.52)
  LinGame + elim (samp) 1.59 (0.42) 6.10 (1.13)  7.87 (1.94)   17.6 (0.15)   1.88 (0.52)
  FWS                  0.67 (0.27)* 2.35 (0.81)  3.13 (1.31)   35.1 (0.47)   2.22 (0.44)
  FWS + elim (samp)    0.67 (0.27)* 2.61 (0.57)  3.37 (1.21)   34.6 (0.27)   2.06 (0.33)
  TopTwo               2.08 (0.96)  0.66 (0.10)  2.29 (0.66)   18.3 (0.53)   1.11 (0.34)
  TopTwo + elim (samp) 2.08 (0.96)  0.67 (0.10)  1.97 (0.30)   18.3 (0.53)   0.91 (0.27)

(*) FWS erred in 1 of 4 runs on Soare d = 2 (binomial p = 0.19 at delta = 0.05; not significant
with 4 runs).  LinGame, FWS and Top Two use their experiments' heuristic threshold
log((1 + log t) / delta), which no theorem makes delta-correct: ratios below 1 are possible (the
lower bound holds for delta-correct algorithms only).  LinGame has no ``stopping_threshold`` yet,
so its wrapper eliminates with Prop 2's larger threshold and at stopping changed nothing.
Lower bounds: 2334 / 2356 / 2378 pulls (Soare), 59.4 (many arms), 2650 (sphere).  Elimination at
stopping never stopped earlier than its base in these 4-run cells (identical rows, paired keys);
at sampling it changed LT&S's sampling on Soare d = 6, 10 (means 10-13 % lower, within 1-2 SE).
"""
from __future__ import annotations

import time

NAME = "modern_vs_seeds"
DESCRIPTION = "Every fixed-confidence algorithm (seeds' and modern, with elimination) on Soare, many arms, sphere"

DELTA = 0.05
CAP = 2_000_000
QUICK_CAP = 200_000
SOARE = dict(omega=0.1, theta_scale=1.0)  # seed 001 Fig. 1a: dict(omega=0.01, theta_scale=2.0)
HARDNESS = 1000.0
MODERN = ("LinGame", "FWS", "TopTwo")  # joined when jaxbandits.algorithms has them
QUICK_ALGS = ("LT&S", "LT&S + elim (stopping)", "LT&S + elim (sampling)", "RAGE")

#: (algorithm, family) pairs not run, with the reason (reported in the log and ``skipped.csv``)
SKIP = {("XY-adaptive", "many_arms"): "XY-adaptive's K x K pair tables at K = 1000 need ~32 GB (XLA out of "
                                       "memory on the 2-core machine); seed001_fig1 runs it on panel (a) only"}

#: published (mean, SE) on the same instances, keyed (family, params, algorithm): none could be
#: read (module docstring)
PUBLISHED: dict = {}


def _soare(key, dim):
    from jaxbandits.instances import seeds

    del key
    return seeds.soare_benchmark(dim, **SOARE)


def _many(key, num_arms):
    from jaxbandits.instances import seeds

    return seeds.many_arms_code(key, num_arms)


def algorithms() -> dict:
    """name -> factory delta -> algorithm (factories, since the wrappers have no delta field)."""
    import jaxbandits.algorithms as A

    algs = {
        "LT&S": lambda d: A.LazyTrackAndStop(delta=d),
        "LT&S + elim (stopping)": lambda d: A.Eliminate(A.LazyTrackAndStop(delta=d)),
        "LT&S + elim (sampling)": lambda d: A.Eliminate(A.LazyTrackAndStop(delta=d), at_sampling=True),
        "RAGE": lambda d: A.RAGE(delta=d),
        "XY-static": lambda d: A.XYStatic(delta=d),
        "XY-oracle": lambda d: A.XYOracle(delta=d),
        "XY-adaptive": lambda d: A.XYAdaptive(delta=d),
        "ALBA": lambda d: A.ALBA(delta=d),
        "Oracle": lambda d: A.Oracle(delta=d),
        "LinGapE": lambda d: A.LinGapE(delta=d),
        "uniform + GLR": lambda d: A.UniformGLR(delta=d),
        "uniform + GLR + elim (stopping)": lambda d: A.Eliminate(A.UniformGLR(delta=d)),
    }
    for name in MODERN:
        cls = getattr(A, name, None)
        if cls is None:
            continue
        algs[name] = (lambda c: lambda d: c(delta=d))(cls)
        if callable(getattr(cls, "linear_stats", None)):
            algs[f"{name} + elim (stopping)"] = (lambda c: lambda d: A.Eliminate(c(delta=d)))(cls)
            if callable(getattr(cls, "step_masked", None)):
                algs[f"{name} + elim (sampling)"] = (lambda c: lambda d: A.Eliminate(c(delta=d), at_sampling=True))(cls)
    return algs


def generators(quick: bool):
    import jaxbandits as jb
    from jaxbandits.instances import seeds

    dims = [2] if quick else [2, 4, 6, 8, 10]
    return [
        jb.Generator("soare", _soare, {"dim": dims}, n_instances=1),
        jb.Generator("many_arms", _many, {"num_arms": [1000]}, n_instances=1 if quick else 5),
        jb.Generator("sphere", seeds.sphere_calibrated, {"dim": [5], "num_arms": [50]},
                     n_instances=2 if quick else 10, fixed=dict(hardness=HARDNESS)),
    ]


def _reps(ctx, gen) -> int:
    if gen.name == "soare":
        return ctx.n_reps(10, 4)
    return ctx.reps or 2


def run(ctx):
    import os

    import pandas as pd

    import jaxbandits as jb
    from jaxbandits.sweeps import summary

    quick = ctx.quick
    algs = algorithms()
    if quick:
        algs = {k: v for k, v in algs.items() if k in QUICK_ALGS}
    # JAXBANDITS_ALGORITHMS="LinGame,FWS,TopTwo,Oracle": only these algorithms (exact names)
    only = [x for x in os.environ.get("JAXBANDITS_ALGORITHMS", "").split(",") if x]
    if only:
        algs = {k: v for k, v in algs.items() if k in only}
    gens = generators(quick)
    cap = QUICK_CAP if quick else CAP
    ctx.config.update(delta=DELTA, cap=cap, soare=SOARE, hardness=HARDNESS, algorithms=list(algs),
                      generators={g.name: dict(grid=g.grid, n_instances=g.n_instances) for g in gens},
                      reps={g.name: _reps(ctx, g) for g in gens})
    frames, skipped = [], []
    tpath = ctx.out / "timing.csv"
    timing = pd.read_csv(tpath).to_dict("records") if tpath.exists() else []  # a resumed run keeps its timings
    timed = {(r["algorithm"], r["generator"]) for r in timing}
    for name, make in algs.items():
        for g in gens:
            if (name, g.name) in SKIP:
                ctx.log(f"[{NAME}] {name} on {g.name}: skipped ({SKIP[(name, g.name)]})")
                skipped.append(dict(algorithm=name, generator=g.name, reason=SKIP[(name, g.name)]))
                continue
            reps = _reps(ctx, g)
            t0 = time.perf_counter()
            try:
                df = ctx.sweep({name: make}, g, deltas=[DELTA], n_reps=reps, key=ctx.key, max_steps=cap,
                              out=ctx.out / "sweep", progress=False, paired=True)
            except (ValueError, TypeError) as e:  # an algorithm that refuses a family (validate)
                ctx.log(f"[{NAME}] {name} on {g.name}: not run ({e})")
                continue
            dt = time.perf_counter() - t0
            if (name, g.name) not in timed:
                timing.append(dict(algorithm=name, generator=g.name, seconds=dt, replications=len(df)))
                pd.DataFrame(timing).to_csv(tpath, index=False)
            ctx.log(f"[{NAME}] {name} on {g.name}: {len(df)} runs in {dt:.1f} s")
            frames.append(df)
    if skipped:
        ctx.write_rows(skipped, "skipped")
    df = pd.concat(frames, ignore_index=True)
    df["point"] = [f"d={r.d}, K={r.K}" for r in df.itertuples()]
    ctx.write_rows(df, "rows")
    by = ["generator", "point", "algorithm"]
    s = summary(df, by)
    s["ratio_se"] = s["se"] / s["lower_bound"]
    t = pd.DataFrame(timing).groupby(["algorithm", "generator"], as_index=False).sum(numeric_only=True)
    t["reps_per_s"] = t["replications"] / t["seconds"]
    s = s.merge(t[["algorithm", "generator", "reps_per_s"]], on=["algorithm", "generator"], how="left")
    s["published"] = [PUBLISHED.get((r.generator, r.point, r.algorithm), "") for r in s.itertuples()]
    s.to_csv(ctx.out / "summary.csv", index=False)
    cols = by + ["runs", "frac_capped", "mean", "se", "lower_bound", "ratio", "ratio_se", "ratio_at_least",
                 "error_rate", "error_lo", "error_hi", "reps_per_s", "published"]
    from jaxbandits.tables import paper_check, paper_notes

    checks = [paper_check(f"{r.algorithm} on {r.generator}, {r.point}", (r.mean, r.se),
                          PUBLISHED[(r.generator, r.point, r.algorithm)])
              for r in s.itertuples() if (r.generator, r.point, r.algorithm) in PUBLISHED]
    ctx.table(s[cols].to_dict("records"), "summary",
              title=f"E[tau] / lower bound (delta = {DELTA}); reps_per_s per (algorithm, family), compile included",
              notes=paper_notes(checks, "published numbers on the same instances"))

    ctx.savefig(figure(s), "ratio")


def figure(s):
    """E[tau] / lower bound per algorithm (bars, 2 SE), one panel per family, one bar per instance
    point; ``s``: the summary frame (generator, point, algorithm, ratio, ratio_at_least, ratio_se).
    Every panel has the same rows (an algorithm not run on a family leaves its row empty)."""
    import numpy as np
    from matplotlib.patches import Patch

    from experiments._figures import legend_outside, log_ticks_plain, new_figure

    names = list(dict.fromkeys(s["algorithm"]))
    fams = list(dict.fromkeys(s["generator"]))
    fig, axes = new_figure(1, len(fams), panel=(4.6, 0.3 * len(names) + 1.4), extra=(2.0 + 1.6 * len(fams), 0.0),
                           sharey=True)
    for ax, fam in zip(axes[0], fams):
        sub = s[s["generator"] == fam]
        pts = list(dict.fromkeys(sub["point"]))
        h = 0.8 / max(len(pts), 1)
        for k, p in enumerate(pts):
            q = sub[sub["point"] == p].set_index("algorithm").reindex(names)
            capped = q["ratio"].isna().to_numpy()
            val = q["ratio"].fillna(q["ratio_at_least"]).to_numpy(float)
            bars = ax.barh(np.arange(len(names)) + k * h, val, height=h,
                           xerr=np.where(capped, np.nan, 2 * q["ratio_se"].to_numpy(float)), label=p)
            for b, c in zip(bars, capped):  # runs hit the step cap: the ratio is only a lower bound
                if c:
                    b.set_hatch("///")
                    b.set_edgecolor("white")
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(np.arange(len(names)) + 0.4 - h / 2, names, fontsize="small")
        ax.set_ylim(len(names) - 0.1 - h / 2, -0.1 - h / 2)  # the first algorithm on top
        ax.set_xscale("log")
        log_ticks_plain(ax.xaxis)
        ax.set_xlabel("E[tau] / lower bound\n(error bars: 2 SE; dashed line: 1)")
        ax.set_title(fam)
        handles, labels = ax.get_legend_handles_labels()
        if sub["ratio"].isna().any():
            handles.append(Patch(facecolor="lightgrey", hatch="///", edgecolor="white"))
            labels.append("at least (capped runs)")
        legend_outside(ax, handles, labels, title="instances")
    axes[0][0].set_ylabel("algorithm")
    return fig
