"""Seed 002 Sec 8.3 (Fig. 3) and App E.3 (Figs. 6-7): random unit-sphere instances (d = 10,
theta = x_i + 0.01 (x_j - x_i) with x_i, x_j the two closest arms), accuracy versus K at fixed
B / K; App E.3 repeats it with sigma^2 = 1 for several B (GSE versus OD-LinBAI) and runs Yang &
Tan's corner case (d = 2).  Every point averages over random instances: J instances x R reps
(J R >= 1000 by default), a fresh instance per replication block.

Default: Fig. 3 at K in {8, 16, 32, 64} (K = 128 left out: its per-pull baselines and Peace cost
more than the rest of the run on 2 shared CPU cores), LinGapE's delta from the three-value grid of
``seed002_adaptive.SWEEP_DELTAS``, plus ``BayesGap-M[released]`` (BayesGap as the authors' code
configures it); Fig. 6 on the release's grid, K in {8, 16, 32, 64} and B in {100, 200, 500} (one
compiled program per (algorithm, K) serves all three budgets); Fig. 7 at K in {4, ..., 64}.
:data:`FINDINGS` (printed after the tables) compares the text, the authors' code and ours."""
from __future__ import annotations

NAME = "seed002_sphere"
DESCRIPTION = "Seed 002 Fig. 3 + App E.3 (Figs. 6, 7): random sphere instances, OD-LinBAI, corner case"

ALGORITHMS = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "OD-LinBAI", "LinGapE",
              "Peace", "BayesGap-Lin", "BayesGap-M[released]"]
BUDGET_PER_ARM = 50  # ours (Fig. 3 fixes B / K; its value is only in the figure)


def run(ctx):
    import jax

    from experiments.seed002_adaptive import SWEEP_DELTAS, best_of_grid, plot_accuracy, print_findings, run_point
    from jaxbandits.instances import seeds

    q = ctx.quick
    n_inst = 4 if q else 100
    reps = ctx.n_reps(10, 5)
    ctx.config.update(instances_per_point=n_inst, reps_per_instance=reps, budget_per_arm=BUDGET_PER_ARM)

    # -- Fig. 3: sigma^2 = 10 (see seeds.sphere_gse), accuracy vs K at B = 50 K
    Ks = [16] if q else [8, 16, 32, 64]
    names = ["GSE-Lin-FWG", "OD-LinBAI"] if q else ALGORITHMS
    rows = []
    for K in Ks:
        inst = seeds.batch(seeds.sphere_gse, jax.random.fold_in(ctx.key, K), n_inst, num_arms=K)
        run_point(ctx, rows, dict(fig="3", K=K, B=BUDGET_PER_ARM * K), names, inst, BUDGET_PER_ARM * K, K, 10,
                  reps, lingape_deltas=(0.1,) if q else SWEEP_DELTAS)
    rows = best_of_grid(rows, "K")
    ctx.table(rows, "fig3", f"Seed 002 Fig. 3: sphere d = 10, sigma^2 = 10, B = {BUDGET_PER_ARM} K, "
                            f"{n_inst} instances x {reps} reps")
    plot_accuracy(ctx, rows, "K", "K", f"sphere, d = 10, B = {BUDGET_PER_ARM}K", logx=True, name="fig3_accuracy")

    # -- Fig. 6: sigma^2 = 1, GSE vs OD-LinBAI, several B.  The budget is a traced argument of the
    # compiled program (Algorithm.dynamic_fields), so each (algorithm, K) compiles once for all B.
    rows6 = []
    Bs = [150] if q else [100, 200, 500]
    Ks6 = [16] if q else [8, 16, 32, 64]
    for K in Ks6:
        inst = seeds.batch(seeds.sphere_odlinbai, jax.random.fold_in(ctx.key, 1000 + K), n_inst, num_arms=K)
        for B in Bs:
            if B < K:
                continue
            run_point(ctx, rows6, dict(fig="6", K=K, B=B), ["GSE-Lin-FWG", "OD-LinBAI"], inst, B, K, 10, reps)
    ctx.table(rows6, "fig6", f"Seed 002 Fig. 6: sphere d = 10, sigma^2 = 1, GSE vs OD-LinBAI")
    plot_accuracy(ctx, rows6, "K", "K", "sphere, sigma^2 = 1", panel_key="B", logx=True, name="fig6_accuracy")

    # -- Fig. 7: corner case (Yang & Tan 2021 Sec 5.1), d = 2, sigma^2 = 1, B = 10 K
    rows7 = []
    Ks7 = [8] if q else [4, 8, 16, 32, 64]
    for K in Ks7:
        inst = seeds.batch(seeds.many_arms_corner, jax.random.fold_in(ctx.key, 2000 + K), n_inst, num_arms=K)
        run_point(ctx, rows7, dict(fig="7", K=K, B=10 * K), ["GSE-Lin-FWG", "OD-LinBAI"], inst, 10 * K, K, 2, reps)
    ctx.table(rows7, "fig7", "Seed 002 Fig. 7: corner case, d = 2, sigma^2 = 1, B = 10 K")
    plot_accuracy(ctx, rows7, "K", "K", "corner case (d = 2), B = 10K", logx=True, name="fig7_accuracy")
    print_findings(ctx, "findings", FINDINGS)


FINDINGS = """(filled in below)"""
