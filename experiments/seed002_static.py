"""Seed 002 Sec 8.2 (Fig. 1): the static instance of Xu et al. (2018): arms e_1..e_16, theta =
(Delta, 0, ..., 0), K = d = 16, B = 320; accuracy versus Delta.  Noise: sigma = 1 (not stated in
Sec 8.2; :func:`jaxbandits.instances.seeds.static_basis`)."""
from __future__ import annotations

NAME = "seed002_static"
DESCRIPTION = "Seed 002 Fig. 1: static instance e_1..e_16, B = 320, accuracy vs Delta"

ALGORITHMS = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "LinUCB", "BayesGap-exp",
              "LinGapE", "Peace"]


def run(ctx):
    from experiments.seed002_adaptive import best_of_grid, plot_accuracy, run_batched_point
    from jaxbandits.instances import seeds
    from jaxbandits.instances.base import stack

    K, B = 16, 320
    gaps = [0.3, 0.6] if ctx.quick else [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]
    names = ["GSE-Lin-FWG", "LinUCB"] if ctx.quick else ALGORITHMS
    reps = ctx.n_reps(1000, 40)
    ctx.config.update(K=K, B=B, gaps=gaps, algorithms=names, reps=reps, noise=1.0)
    # One batch of instances (one per Delta): every algorithm compiles once for all Deltas.
    inst = stack([seeds.static_basis(g, d=K) for g in gaps])
    rows = []
    run_batched_point(ctx, rows, dict(B=B), names, inst, "Delta", gaps, B, K, K, reps,
                      lingape_deltas=(0.1,) if ctx.quick else None)
    rows = best_of_grid(rows, "Delta")
    ctx.table(rows, "summary", f"Seed 002 Fig. 1 (static instance), K = d = 16, B = 320, {reps} reps")
    plot_accuracy(ctx, rows, "Delta", "Delta", "static instance e_1..e_16, B = 320")
