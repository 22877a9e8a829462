"""Seed 001 Figure 1 (Fiez et al. 2019, Sec 5): mean sample complexity of RAGE and the baselines
at delta = 0.05, unit Gaussian noise, on

  (a) the Soare benchmark, X = Z = {e_1..e_d, cos(.01) e_1 + sin(.01) e_2}, theta = 2 e_1, over d;
  (b) many arms with moderate gaps (d = 2, the released code's instance), over K;
  (c) arms uniform on the unit sphere of R^9, theta = the closer of the two closest arms, over K;
  (d) the transductive example (X = {e_i}, Z of d items), over d.

Algorithms as in the paper: RAGE, XY-adaptive (panel a only, as the paper), LinGapE (as analysed,
"optimized" selection, App F; panels a-c when :mod:`jaxbandits.algorithms.top_m.gifa` is present), ALBA
(panels a-c; X = Z only), XY-static, XY-oracle.  Every row reports the lower bound
sigma^2 T*(theta) kl(delta, 1 - delta) (averaged over the random instances), the mean with its
standard error and standard deviation, and the error rate with its Clopper-Pearson interval.
XY-static and XY-oracle use the certified design by default (the better of App F's Frank-Wolfe
and the certified solver; :mod:`jaxbandits.algorithms.fixed_confidence.xy`); their rows carry the design's value
and certified relative gap (mean over the instances).  Panel (d) also runs App F's Frank-Wolfe
design alone ("[App F FW]", as the paper did: it stops on a 1 % change of lambda and leaves
arms at weight ~5e-5 that the XY-oracle must wait for) and the XY-oracle with App B rounding
instead of multinomial draws ("[rounding]").  Every algorithm reads the noise scale (sigma =
the instance's noise, 1 here, so sigma changes nothing on these instances: RAGE, ALBA, XY-adaptive
and the App F FW rows give bitwise the same samples as before sigma was added).

Measured, panel (d), 100 replications per point, mean (SE), no errors anywhere:

  d    XY-oracle   [App F FW]   [rounding]   XY-static       [App F FW]      RAGE
  20   25723 (465) 60307 (2339) 15960 (487)  1.936e6 (7.0e4) 1.645e6 (6.1e4) 35605 (2217)
  40   28962 (452) 28637 (563)  19421 (576)  5.035e6 (1.6e5) 3.448e6 (1.1e5) 40897 (2297)
  60   32540 (451) 35002 (700)  20599 (509)  6.477e6 (1.9e5) 5.813e6 (2.0e5) 42845 (1785)
  80   35777 (509) 41299 (947)  22124 (476)  6.463e6 (2.2e5) 6.679e6 (2.0e5) 46056 (1589)

Designs (value, certified relative gap): XY-oracle 451.6 / 3e-4, 464.2 / 3e-3, 479.4 / 0.034,
489.6 / 0.034 (App F FW: 494.0 / 0.15, 630.3 / 0.46, 701.4 / 34, 762.3 / 28); XY-static 23.97 /
7e-6, 48.75 / 0.14, 73.2 / 0.17, 99.77 / 0.24 (App F FW: 24.32, 49.00, 73.68, 99.77; at d = 80
the polish did not improve App F's design, which is kept).

The XY-oracle bump at d = 20 (App F FW: 60.3k, previously 58.6k) is the solver's: its design has
9 arms at weight 4.8e-5 that multinomial draws take ~H_9 / 4.8e-5 = 5.9e4 pulls to reach; the
certified design (value 451.6 vs 494.0, smallest weight 2.5e-4) gives 25.7k and a monotone curve.
XY-static goes the other way: the certified XY design has a slightly smaller rho (23.97 vs 24.32
at d = 20) but spends less on the one hard direction z_1 - z_11 (||y||^2_{A(lambda)^-1} = 1.093 vs
0.963; weight of e_11 0.0091 vs 0.0104), and needs 18-46 % more pulls than App F's.
The paper plots means over 20 runs with standard-error bars; we run ``reps`` replications
(default 100) on each of ``instances`` random instances (panels b, c: one fresh instance per
replication in the released code; here ``instances`` instances x reps/instances replications).
"""
from __future__ import annotations

import math

NAME = "seed001_fig1"
DESCRIPTION = "Seed 001 Fig. 1 (a)-(d): RAGE vs XY-adaptive, LinGapE, ALBA, XY-static, XY-oracle"

DELTA = 0.05
SLOW_MAX_D = 10  # panel (a): largest d at which XY-adaptive and LinGapE run by default
# panel (c): largest K at which LinGapE runs by default.  Measured in the default run (2 shared
# cores): 20 replications took 205 s at K = 250 (mean 7.8e3 pulls, each pull O(K^2) gap indices
# plus the eq. (1) L1 problem over K arms in d = 9); at K = 500 they had not finished after 10 min.
SLOW_MAX_K_C = 250


def algorithms(names, delta=DELTA):
    """name -> configured algorithm (LinGapE only when gifa.py provides it)."""
    from jaxbandits.algorithms.fixed_confidence.alba import ALBA
    from jaxbandits.algorithms.fixed_confidence.rage import RAGE
    from jaxbandits.algorithms.fixed_confidence.xy import XYAdaptive, XYOracle, XYStatic

    out = {}
    for n in names:
        if n == "RAGE":
            out[n] = RAGE(delta=delta)
        elif n == "XY-adaptive":
            out[n] = XYAdaptive(delta=delta, alpha=0.1)
        elif n == "ALBA":
            out[n] = ALBA(delta=delta)
        elif n == "XY-static":
            out[n] = XYStatic(delta=delta, gamma=1.35)
        elif n == "XY-oracle":
            out[n] = XYOracle(delta=delta, gamma=1.1)
        elif n == "XY-static [App F FW]":
            out[n] = XYStatic(delta=delta, gamma=1.35, design_method="paper")
        elif n == "XY-oracle [App F FW]":
            out[n] = XYOracle(delta=delta, gamma=1.1, design_method="paper")
        elif n == "XY-oracle [rounding]":
            out[n] = XYOracle(delta=delta, gamma=1.1, sampling="round")
        elif n == "LinGapE":
            try:
                from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE
            except ImportError:
                continue
            out[n] = LinGapE(delta=delta, selection="optimized")
    return out


# Step caps: phase-based algorithms need few steps; per-pull ones many.
STEP_CAPS = {"RAGE": 60, "XY-static": 400, "XY-oracle": 1200, "ALBA": 2000, "XY-adaptive": 2_000_000,
             "LinGapE": 20_000_000, "XY-static [App F FW]": 400, "XY-oracle [App F FW]": 1200,
             "XY-oracle [rounding]": 1200}


def summarize_point(ctx, res, lb, design=None, **label):
    from jaxbandits.stats import clopper_pearson

    s = res.summary()
    n = int(res.ran.sum())
    errors = int((~res.correct[res.ran]).sum())
    lo, hi = clopper_pearson(errors, n) if n else (math.nan, math.nan)
    row = dict(**label, mean=s["mean"], se=s["se"], std=s["std"], lower_bound=lb,
               ratio_to_lb=s["mean"] / lb if lb > 0 else math.nan, error=errors / max(n, 1),
               err_lo=lo, err_hi=hi, capped=s["frac_capped"], reps=n,
               wall_s=res.wall_time + res.compile_time)
    if design is not None:
        # the fixed design of XY-static / XY-oracle: value and certified relative gap
        row.update(design_value=float(design["design_value"].mean()),
                   design_rel_gap=float(design["design_rel_gap"].max()))
    return row


def average_lower_bound(inst, delta=DELTA):
    """Mean over the instances of sigma^2 T* kl(delta, 1 - delta), one jitted solve per instance
    (a vmapped solve runs every instance to the slowest one's iteration count)."""
    import jax
    import numpy as np

    from jaxbandits.design import lower_bound

    if not inst.is_batched:
        return float(lower_bound(inst, delta))
    fn = jax.jit(lambda i: lower_bound(i, delta))
    return float(np.mean([float(fn(inst[j])) for j in range(inst.batch_shape[0])]))


def run_panel(ctx, rows, panel, xname, points, names, reps, n_instances=1, caps=None,
              reps_by_alg=None, max_x_by_alg=None):
    """points: list of (x, instances); runs every algorithm of ``names`` at every point
    (``reps_by_alg``: fewer replications for the per-pull algorithms; ``max_x_by_alg``: the
    largest x at which an algorithm is run)."""
    caps = dict(STEP_CAPS, **(caps or {}))
    reps_by_alg = reps_by_alg or {}
    max_x_by_alg = max_x_by_alg or {}
    for x, inst in points:
        lb = average_lower_bound(inst)
        J = inst.batch_shape[0] if inst.is_batched else 1
        for name, alg in algorithms(names).items():
            if name == "ALBA" and inst.arms.shape != inst.items.shape:
                continue
            if x > max_x_by_alg.get(name, math.inf):
                continue
            per = max(1, math.ceil(reps_by_alg.get(name, reps) / J))
            res = ctx.simulate(dict(panel=panel, x=x, algorithm=name), alg, inst, per, caps[name])
            rep = alg.design_report(inst) if hasattr(alg, "design_report") else None
            rows.append(summarize_point(ctx, res, lb, rep, panel=panel, **{xname: x}, algorithm=name))
            r = rows[-1]
            extra = (f", design value {r['design_value']:.4g} (certified rel. gap "
                     f"{r['design_rel_gap']:.2g})" if rep is not None else "")
            ctx.log(f"  {panel} {xname}={x} {name}: mean {r['mean']:.1f} (se {r['se']:.1f}), "
                    f"LB {lb:.1f}, error {r['error']:.3f}, {r['wall_s']:.1f}s{extra}")


#: axis labels of the panels' x variables
AXIS_NAMES = {"d": "dimension d", "K": "number of arms K", "x": "panel parameter", "omega": "angle omega (rad)"}


def plot(ctx, rows, panels, name):
    """Mean sample complexity (+- 1 SE) against each panel's x, one series per algorithm (the same
    colour and marker in every panel, dodged sideways at each x so that equal values stay visible),
    and the lower bound; x ticked at the points run; one legend beside the panels."""
    from experiments._figures import dodge, grid_axis, legend_outside, new_figure, plain_log_ticks, series_styles

    style = series_styles(r["algorithm"] for r in rows)
    fig, axes = new_figure(1, len(panels), panel=(4.0, 3.4), extra=(2.4, 0.0))
    for ax, (panel, xname, title) in zip(axes[0], panels):
        pr = [r for r in rows if r["panel"] == panel]
        xs = sorted({r[xname] for r in pr})
        names = list(dict.fromkeys(r["algorithm"] for r in pr))
        for i, alg in enumerate(names):
            ar = sorted([r for r in pr if r["algorithm"] == alg], key=lambda r: r[xname])
            ax.errorbar(dodge([r[xname] for r in ar], i, len(names), grid=xs), [r["mean"] for r in ar],
                        yerr=[r["se"] for r in ar], ms=5, capsize=2, label=alg, **style[alg])
        lb = {r[xname]: r["lower_bound"] for r in pr}
        ax.plot(xs, [lb[x] for x in xs], "k--", marker="s", ms=4, lw=1, label="lower bound")
        grid_axis(ax, xs)
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_xlabel(AXIS_NAMES.get(xname, xname))
        ax.set_ylabel("mean sample complexity (pulls)")
        ax.set_title(title, fontsize=9)
    legend_outside(fig, title="error bars: $\\pm$ 1 SE")
    ctx.savefig(fig, name)


def run(ctx):
    import os

    import jax

    from jaxbandits.instances import seeds

    q = ctx.quick
    reps = ctx.n_reps(100, 8)
    # --quick: one point per panel and a few algorithms (compilation dominates at this size).
    ds_a = [3] if q else [5, 10, 15, 20, 25, 30, 35]
    ks_b = [50] if q else [250, 500, 1000, 2000]
    ks_c = [50] if q else [250, 500, 1000]
    ds_d = [4] if q else [20, 40, 60, 80]
    n_inst = 4 if q else 20
    omega_a = 0.3 if q else 0.01          # quick: an easy angle so it finishes in seconds
    names_a = (["RAGE", "XY-adaptive", "XY-static"] if q else
               ["RAGE", "XY-adaptive", "LinGapE", "ALBA", "XY-static", "XY-oracle"])
    names_bc = ["RAGE", "ALBA"] if q else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]
    names_d = (["RAGE", "XY-oracle"] if q else
               ["RAGE", "XY-static", "XY-oracle", "XY-static [App F FW]", "XY-oracle [App F FW]",
                "XY-oracle [rounding]"])
    # The per-pull algorithms (XY-adaptive, LinGapE) need ~1e6 pulls per replication on the Soare
    # benchmark with omega = 0.01 (seed 001's code: ~30 s each); on 2 shared cores they get the
    # paper's 20 replications and panel (a) only up to d = SLOW_MAX_D, and LinGapE 20 on (b)/(c).
    slow_reps = {} if q else {"XY-adaptive": min(reps, 20), "LinGapE": min(reps, 20)}
    slow_max = {} if q else {"XY-adaptive": SLOW_MAX_D, "LinGapE": SLOW_MAX_D}
    ctx.config.update(delta=DELTA, reps=reps, d_a=ds_a, omega_a=omega_a, K_b=ks_b, K_c=ks_c, d_d=ds_d,
                      instances_bc=n_inst, algorithms_a=names_a, algorithms_bc=names_bc,
                      algorithms_d=names_d, noise=1.0, reps_by_algorithm=slow_reps,
                      max_d_panel_a=slow_max, max_K_panel_c_lingape=None if q else SLOW_MAX_K_C)
    # JAXBANDITS_FIG1_PANELS (e.g. "d"): run only these panels (default: all four)
    panels = os.environ.get("JAXBANDITS_FIG1_PANELS", "abcd")
    ctx.config.update(panels=panels)
    rows = []
    # cheapest panels first, so that an interrupted run has them (results are written as they go)
    if "d" in panels:
        run_panel(ctx, rows, "d", "d", [(d, seeds.transductive_example(d)) for d in ds_d], names_d, reps)
    kb = jax.random.fold_in(ctx.key, 1)
    if "b" in panels:
        run_panel(ctx, rows, "b", "K",
                  [(k, seeds.batch(seeds.many_arms_code, jax.random.fold_in(kb, k), n_inst, num_arms=k))
                   for k in ks_b], names_bc, reps, reps_by_alg=slow_reps)
    if "a" in panels:
        run_panel(ctx, rows, "a", "d", [(d, seeds.soare_benchmark(d, omega=omega_a)) for d in ds_a],
                  names_a, reps, reps_by_alg=slow_reps, max_x_by_alg=slow_max)
    kc = jax.random.fold_in(ctx.key, 2)
    if "c" in panels:
        run_panel(ctx, rows, "c", "K",
                  [(k, seeds.batch(seeds.sphere_rage, jax.random.fold_in(kc, k), n_inst, num_arms=k))
                   for k in ks_c], names_bc, reps, reps_by_alg=slow_reps,
                  max_x_by_alg={} if q else {"LinGapE": SLOW_MAX_K_C})
    ctx.table(rows, "summary", f"Seed 001 Fig. 1, delta = {DELTA}, {reps} replications per point")
    plot(ctx, rows, [p for p in [("a", "d", f"(a) Soare benchmark, omega={omega_a}"),
                                 ("b", "K", "(b) many arms (code instance)"),
                                 ("c", "K", "(c) unit sphere, d = 9"), ("d", "d", "(d) transductive")]
                     if p[0] in panels], "fig1")
