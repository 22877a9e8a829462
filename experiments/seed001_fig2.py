"""Seed 001 Figure 2(a) (Fiez et al. 2019, Sec 5, "multivariate testing"): D factors with two
levels, K = 2^D layouts, arms X = Z the factorial features with pairwise interactions
(1 + D + D(D-1)/2 dimensions), theta drawn from the discrete uniform on [-0.3, 0.3] step 0.01
(alpha_1 = 1, alpha_2 = 0.5), unit Gaussian noise, delta = 0.05; mean sample complexity over D.

Algorithms as in the figure: RAGE, LinGapE (as analysed, when gifa.py is present), ALBA, XY-static,
XY-oracle.  Each point: ``instances`` random instances (50 in the released code), reps spread
over them; the lower bound sigma^2 T* kl(delta, 1 - delta) is averaged over the instances.
"""
from __future__ import annotations

NAME = "seed001_fig2"
DESCRIPTION = "Seed 001 Fig. 2(a): multivariate testing over the number of factors D"


def run(ctx):
    import jax

    from experiments.seed001_fig1 import DELTA, plot, run_panel
    from jaxbandits.instances import seeds

    q = ctx.quick
    reps = ctx.n_reps(100, 8)
    Ds = [3] if q else [3, 4, 5, 6]
    n_inst = 4 if q else 50
    names = ["RAGE", "XY-static"] if q else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]
    ctx.config.update(delta=DELTA, reps=reps, D=Ds, instances=n_inst, algorithms=names, noise=1.0)
    rows = []
    k = jax.random.fold_in(ctx.key, 7)
    run_panel(ctx, rows, "2a", "D",
              [(D, seeds.batch(seeds.multivariate_testing, jax.random.fold_in(k, D), n_inst,
                               num_factors=D)) for D in Ds], names, max(reps, n_inst))
    ctx.table(rows, "summary", f"Seed 001 Fig. 2(a), delta = {DELTA}")
    plot(ctx, rows, [("2a", "D", "(2a) multivariate testing")], "fig2a")
