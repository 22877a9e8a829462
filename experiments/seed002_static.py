"""Seed 002 Sec 8.2 (Fig. 1): the static instance of Xu et al. (2018): arms e_1..e_16, theta =
(Delta, 0, ..., 0), K = d = 16, B = 320; accuracy versus Delta.

Two sweeps.  The default one is the instance the authors' code runs (jobStBAI.py ``synt 5``):
sigma^2 = 10 (the noise of every synthetic job of the release; Sec 8.2 does not state it) and
Delta in {0.01, 0.03, 0.05, 0.1, 0.3} (its ``delta_s5`` grid), B = 20 K = 320.  The second,
sigma = 1 and Delta in {0.1, ..., 1.0}, has ten times the signal-to-noise ratio; there every
algorithm reaches accuracy ~1 at large Delta (BayesGap-exp .995 and LinGapE 1.000 at Delta = 1).  ``BayesGap-exp[released]`` is BayesGap as the
authors' code configures it (:func:`jaxbandits.algorithms.fixed_budget.bayesgap.released_config`)."""
from __future__ import annotations

import math

NAME = "seed002_static"
DESCRIPTION = "Seed 002 Fig. 1: static instance e_1..e_16, B = 320, accuracy vs Delta"

ALGORITHMS = ["GSE-Lin", "GSE-Lin-FWG", "GSE-Lin-Greedy", "GSE-Lin-Wynn", "LinUCB", "BayesGap-exp",
              "BayesGap-exp[released]", "LinGapE", "Peace"]
CODE_GAPS = [0.01, 0.03, 0.05, 0.1, 0.3]  # the release's delta_s5 grid
CODE_SIGMA = math.sqrt(10.0)
SIGMA1_GAPS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]

FINDINGS = """\
#### Fig. 1 (static instance): paper text vs the authors' code vs ours

The text: LinUCB best at small Delta, GSE second-best at large Delta, "BayesGap-exp, LinGapE, and
Peace cannot take advantage of larger Delta".  At sigma = 1 and Delta up to 1.0 (the second
sweep, ten times easier than the authors' instance) BayesGap-exp and LinGapE reach .995 / 1.000.
* Same instance?  Arms, theta, K, B = 20 K agree; the release runs sigma^2 = 10 and Delta <= 0.3
  (job script), where 320 pulls leave every algorithm within about 0.1 of chance (1/16): the
  default sweep.
* Same algorithm?  The release's BayesGap-exp is exp(-||x - x'||^2 / 1000) (all arms correlated
  0.998 a priori), prior std 50, its own beta and variance-wide bounds (row
  BayesGap-exp[released]); its LinGapE uses delta = 0.4, lambda = 1e-8 and sigma^2 (not sigma)
  in the width; its LinUCB is the disjoint (per-arm) LinUCB with alpha = 0.51.
* Same metric?  Yes (the returned arm is the true best; no ties).
At the authors' instance the text's claims do not reproduce as a ranking: at Delta = 0.3 every
algorithm, in their code and ours, is between 0.10 and 0.18, with 95% intervals about +-0.025
(ours, 1000 reps) and +-0.08 (theirs, 60-100 reps); the differences the text describes are not
resolved (the code's LinGapE, .08, is the one that does look stuck near chance).  Measured (accuracy, 95% Clopper-Pearson):
"""


def run(ctx):
    from experiments.seed002_adaptive import (best_of_grid, plot_accuracy, print_findings, run_batched_point,
                                             side_by_side)
    from jaxbandits.instances import seeds
    from jaxbandits.instances.base import stack

    K, B = 16, 320
    names = ["GSE-Lin-FWG", "BayesGap-exp[released]"] if ctx.quick else ALGORITHMS
    reps = ctx.n_reps(1000, 40)
    sweeps = [("code", CODE_SIGMA, [0.1, 0.3] if ctx.quick else CODE_GAPS),
              ("sigma1", 1.0, [0.3, 0.6] if ctx.quick else SIGMA1_GAPS)]
    ctx.config.update(K=K, B=B, sweeps={s: dict(sigma=n, gaps=g) for s, n, g in sweeps}, algorithms=names,
                      reps=reps)
    code_rows = []
    for tag, noise, gaps in sweeps:
        # One batch of instances (one per Delta): every algorithm compiles once for all Deltas.
        inst = stack([seeds.static_basis(g, d=K, noise=noise) for g in gaps])
        rows = []
        run_batched_point(ctx, rows, dict(B=B, sigma=round(noise, 4)), names, inst, "Delta", gaps, B, K, K, reps,
                          lingape_deltas=(0.1,) if ctx.quick else None)
        rows = best_of_grid(rows, "Delta")
        if tag == "code":
            code_rows = rows
        ctx.table(rows, f"summary_{tag}", f"Seed 002 Fig. 1 (static instance), K = d = 16, B = 320, "
                                          f"sigma = {noise:.4g}, {reps} reps")
        plot_accuracy(ctx, rows, "Delta", "gap Delta between the best and the other arms (reward units)", f"static instance e_1..e_16, B = 320, sigma = {noise:.3g}",
                      name=f"accuracy_{tag}")
    print_findings(ctx, "findings", FINDINGS + side_by_side(code_rows, AUTHORS_CODE_RESULTS, "Delta"))


_WHY_NOISE = "sigma^2 = 10: all near chance (1/16)"
AUTHORS_CODE_RESULTS = [
    dict(ours="GSE-Lin-FWG", x=0.3, code=(13, 100), text="second-best at large Delta", why=_WHY_NOISE),
    dict(ours="LinUCB", x=0.3, code=(16, 100), text="best at small Delta", why="code: disjoint LinUCB, alpha 0.51"),
    dict(ours="BayesGap-exp", x=0.3, code=(16, 100), text="cannot use larger Delta",
         why="code: exp(-r^2/1000) kernel, eta 50, own beta"),
    dict(ours="BayesGap-exp[released]", x=0.3, code=(16, 100), text="cannot use larger Delta",
         why="our emulation of the code's BayesGap"),
    dict(ours="LinGapE", x=0.3, code=(5, 60), text="cannot use larger Delta",
         why="code: delta 0.4, lambda 1e-8, sigma^2 in the width"),
]
"""Accuracy of the authors' code on its own static instance (jobStBAI.py synt 5: K = d = 16,
B = 320, sigma^2 = 10), measured once in a side-by-side harness (``AUTHORS_CODE`` in
:mod:`experiments.seed002_adaptive`): (successes, replications).  Only Delta = 0.3 was run (the
machine's 2 shared cores allowed 100 replications per algorithm, 60 for LinGapE, which solves an
LP per pull)."""
