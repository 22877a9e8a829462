"""Seed 001 Figure 2(a) (Fiez et al. 2019, Sec 5, "multivariate testing"): D factors with two
levels, K = 2^D layouts, arms X = Z the factorial features with pairwise interactions
(1 + D + D(D-1)/2 dimensions), theta drawn from the discrete uniform on [-0.3, 0.3] step 0.01
(alpha_1 = 1, alpha_2 = 0.5), unit Gaussian noise, delta = 0.05; mean sample complexity over D.

Algorithms as in the figure: RAGE, LinGapE (as analysed, when gifa.py is present), ALBA, XY-static,
XY-oracle.  Each point: ``instances`` random instances (50 in the released code), reps spread
over them; the lower bound sigma^2 T* kl(delta, 1 - delta) is averaged over the instances.

LinGapE is a per-pull algorithm (one least-squares update per sample): by default it runs up to
D = ``LINGAPE_MAX_D`` = 4.  Measured in the default
run on the shared 2-core machine: at D = 4 (K = 16, d = 11) 100 replications averaged 2.0e5 pulls
and took 996 s, about 2e4 pulls per second; at D = 5 (K = 32, d = 16) a replication needs several
times more pulls, each costing more (K^2 gap indices, a d = 16 solve), i.e. hours.  ``--reps``
does not lift the cap; edit ``LINGAPE_MAX_D`` for a longer study.

XY-static / XY-oracle use the certified design by default (:mod:`jaxbandits.algorithms.fixed_confidence.xy`).
Measured (50 instances x 2 replications per D, mean (SE), no errors; design value
averaged over the instances, largest certified relative gap):

  D   XY-static            design     XY-oracle           design
  3   36071 (7409)         16 / 0     20301 (4553)        446.3 / 0.002
  4   3.064e5 (9.3e4)      24 / 3e-9  1.076e5 (3.7e4)     1975 / 0.028
  5   5.380e5 (1.9e5)      36 / 9e-9  1.143e5 (3.9e4)     1946 / 0.061
  6   1.026e6 (3.1e5)      48.7/0.089 1.111e5 (2.0e4)     2807 / 0.072

(RAGE and ALBA with their sigma option at unit noise reproduce their previous samples bitwise,
so their rows were not rerun.)
"""
from __future__ import annotations

NAME = "seed001_fig2"
LINGAPE_MAX_D = 4
DESCRIPTION = "Seed 001 Fig. 2(a): multivariate testing over the number of factors D"


def run(ctx):
    import os

    import jax

    from experiments.seed001_fig1 import DELTA, plot, run_panel
    from jaxbandits.instances import seeds

    q = ctx.quick
    reps = ctx.n_reps(100, 8)
    Ds = [3] if q else [3, 4, 5, 6]
    n_inst = 4 if q else 50
    names = ["RAGE", "XY-static"] if q else ["RAGE", "LinGapE", "ALBA", "XY-static", "XY-oracle"]
    # JAXBANDITS_FIG2_ALGORITHMS (comma-separated, e.g. "XY-static,XY-oracle"): run only these
    only = os.environ.get("JAXBANDITS_FIG2_ALGORITHMS")
    if only:
        names = [n for n in only.split(",") if n]
    ctx.config.update(delta=DELTA, reps=reps, D=Ds, instances=n_inst, algorithms=names, noise=1.0,
                      lingape_max_D=None if q else LINGAPE_MAX_D)
    rows = []
    k = jax.random.fold_in(ctx.key, 7)
    run_panel(ctx, rows, "2a", "D",
              [(D, seeds.batch(seeds.multivariate_testing, jax.random.fold_in(k, D), n_inst,
                               num_factors=D)) for D in Ds], names, max(reps, n_inst),
              max_x_by_alg={} if q else {"LinGapE": LINGAPE_MAX_D})
    ctx.table(rows, "summary", f"Seed 001 Fig. 2(a), delta = {DELTA}")
    plot(ctx, rows, [("2a", "D", "(2a) multivariate testing")], "fig2a")
