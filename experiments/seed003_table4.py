"""Seed 003 Table 4 (App. A.2): fraction of 1000 random Gaussian instances with
H(m-LinGapE optimized) <= H(UGapE), for every (D, K, m, N) column, next to the paper's percentages.

Instances: :func:`jaxbandits.instances.seeds.topm_random_gaussian` (theta = e_1; the released
code's spectral normalisation, under which D has no effect; ``normalize="columns"`` is the text's
reading and is also reported).  Constants: :mod:`jaxbandits.algorithms.top_m.complexity` with
epsilon = 0 and sigma = 1 (the released code compares H_LinGapE < 2 H_UGapE / sigma^2 with
sigma = 1, i.e. Table 2's constants with sigma = 1).  Every w*(i, j) is an exact LP solution
(batched simplex); instances whose LPs did not converge are counted and excluded (none expected).
"""
from __future__ import annotations

import time

import numpy as np

NAME = "seed003_table4"
DESCRIPTION = "Seed 003 Table 4: % of random instances with H(m-LinGapE optimized) <= H(UGapE)"

PAPER = [29.1, 30.8, 0.0, 0.0, 0.0, 0.0, 0.6, 0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.0, 0.0]
PAPER_INSTANCES = 1000  #: random instances behind each percentage (App. A.2)
#: the cause of a disagreement with ``PAPER``, by normalisation (none known for the released code's)
CAUSES = {"columns": ("the text's column normalisation (every arm of unit length) draws other instances than the "
                      "released code's spectral normalisation (X / ||X||_2), which produced the table's percentages.")}


def run(ctx):
    import jax

    from jaxbandits.instances.seeds import TOPM_TABLE4, topm_random_gaussian
    from jaxbandits.stats import clopper_pearson
    n = ctx.n_reps(1000, 20)
    settings = list(zip(TOPM_TABLE4, PAPER))
    if ctx.quick:
        settings = settings[:1]
    rows, per_instance = [], []
    for norm in ("spectral", "columns"):
        for s, paper in settings:
            t0 = time.perf_counter()
            key = jax.random.fold_in(ctx.label_key(dict(table4=s, normalize=norm)), 0)
            keys = jax.random.split(key, n)
            X = jax.vmap(lambda k: topm_random_gaussian(k, s["K"], s["N"], D=s["D"], normalize=norm).arms)(keys)
            theta = topm_random_gaussian(keys[0], s["K"], s["N"]).theta
            out = {}
            for i in range(0, n, 250):  # progress every 250 instances
                o = _constants(X[i:i + 250], theta, s["m"])
                for k, v in o.items():
                    out.setdefault(k, []).append(np.asarray(v))
            out = {k: np.concatenate(v) for k, v in out.items()}
            ok = out["lp_converged"]
            per_instance.append(dict(normalize=norm, D=s["D"], K=s["K"], m=s["m"], N=s["N"], instance=np.arange(n),
                                     **{k: v for k, v in out.items() if np.ndim(v) == 1}))
            hits = int(np.sum(out["lingape_opt"][ok] <= out["ugape"][ok]))
            lo, hi = clopper_pearson(hits, int(ok.sum()))
            rows.append(dict(normalize=norm, D=s["D"], K=s["K"], m=s["m"], N=s["N"], instances=int(ok.sum()),
                             lp_failures=int((~ok).sum()), hits=hits, percent=round(100 * hits / max(int(ok.sum()), 1), 1),
                             CI95=f"[{100 * lo:.1f}, {100 * hi:.1f}]", paper=paper,
                             median_ratio=float(np.median(out["lingape_opt"][ok] / out["ugape"][ok])),
                             seconds=round(time.perf_counter() - t0, 1)))
            ctx.log(str(rows[-1]))
    import pandas as pd

    ctx.write_rows(pd.concat([pd.DataFrame(r) for r in per_instance], ignore_index=True), "instances")
    summary(ctx, rows)


def check(row):
    """Our percentage of one row against the paper's (:func:`jaxbandits.tables.paper_check_rate`,
    pooled over our instances and the paper's ``PAPER_INSTANCES``), with its known cause."""
    from jaxbandits.tables import paper_check_rate

    hits = row["hits"]
    return paper_check_rate(f"{row['normalize']} normalisation, D = {row['D']}, K = {row['K']}, m = {row['m']}, "
                            f"N = {row['N']}", (hits, row["instances"]), (row["paper"] / 100, PAPER_INSTANCES),
                            CAUSES.get(row["normalize"]))


def summary(ctx, rows):
    """Print and save ``table4.md``: the rows with their paper check, every disagreement and its cause."""
    from jaxbandits.tables import paper_notes

    checks = []
    for r in rows:
        c = check(r)
        r["vs_paper"] = c.cell
        checks.append(c)
    ctx.table(rows, "table4", "Seed 003 Table 4: % instances with H(m-LinGapE(2)) <= H(UGapE)",
              notes=paper_notes(checks, "the paper's Table 4 (as fractions)"))


_cache = {}


def _constants(X, theta, m):
    """Table 2 constants of a batch of instances.  ``lax.map`` over instances (each one a vmap over
    its K (K - 1) / 2 LPs): a vmapped simplex runs every lane until the slowest pivots, so lanes
    from one instance at a time waste less than one big batch, and the tableaux stay in cache."""
    import jax

    from jaxbandits.algorithms.top_m import complexity as cx
    f = _cache.get(m)
    if f is None:
        f = jax.jit(lambda X, th: jax.lax.map(lambda x: cx.complexity_constants(x, th, m, 0.0, 1.0), X))
        _cache[m] = f
    return f(X, theta)
