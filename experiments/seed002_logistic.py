"""Seed 002 Sec 8.4 (Fig. 4): logistic bandit, K = 8 arms uniform on [-0.5, 0.5]^d, theta ~
N(0, 3/d I), Bernoulli(sigmoid(x^T theta)) rewards, d in {5, 7, 10, 12}; accuracy versus B / K for
GSE-Log-FWG, GSE-Log (uniform), GSE-Lin-FWG and GSE-Lin (misspecified linear model), UCB-GLM and
BayesGap-M.  Every point averages over random instances (J instances x R reps).

The budget is a traced argument of the compiled program (``Algorithm.dynamic_fields``): for each d,
every algorithm compiles once and serves all five B / K values (24 compiled programs instead of
120)."""
from __future__ import annotations

NAME = "seed002_logistic"
DESCRIPTION = "Seed 002 Fig. 4: logistic bandit K = 8, d in {5,7,10,12}, accuracy vs B/K"

ALGORITHMS = ["GSE-Log-FWG", "GSE-Log", "GSE-Lin-FWG", "GSE-Lin", "UCB-GLM", "BayesGap-M"]


def run(ctx):
    import jax

    from experiments.seed002_adaptive import plot_accuracy, run_point
    from jaxbandits.instances import seeds

    q = ctx.quick
    K = 8
    ds = [5] if q else [5, 7, 10, 12]
    bpk = [50] if q else [10, 25, 50, 100, 200]
    names = ["GSE-Log-FWG", "GSE-Lin-FWG"] if q else ALGORITHMS
    n_inst = 4 if q else 100
    reps = ctx.n_reps(10, 5)
    ctx.config.update(K=K, ds=ds, budget_per_arm=bpk, algorithms=names, instances_per_point=n_inst,
                      reps_per_instance=reps)
    rows = []
    for d in ds:
        inst = seeds.batch(seeds.logistic_gse, jax.random.fold_in(ctx.key, d), n_inst, num_arms=K, dim=d)
        for b in bpk:
            run_point(ctx, rows, dict(d=d, B_per_K=b), names, inst, b * K, K, d, reps)
    ctx.table(rows, "summary", f"Seed 002 Fig. 4: logistic bandit, K = 8, {n_inst} instances x {reps} reps")
    plot_accuracy(ctx, rows, "B_per_K", "B / K", "logistic, K = 8", panel_key="d", logx=True)
