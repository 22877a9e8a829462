"""Fixed-confidence Peace (Katz-Samuels, Jain, Karnin & Jamieson, NeurIPS 2020) on Soare et al.'s
instance: :class:`jaxbandits.algorithms.FixedConfidencePeace` beside the independent NumPy
implementation of ``benchmarks/fc_peace_reference.py`` (run here, in this process) and beside the
authors' released transductive run (github.com/jkatzsam/linear_bandits_empirical_process,
``transductive_bandits_alg.py``, ``lin_tb_alg`` with ``iters=500, delta=0.05, epsilon=0.5``, as
their ``run_experiment_transductive`` calls it), whose numbers are recorded in :data:`RELEASED`
(measured with their code, PyTorch 2.13 on the CPU, outside this repository: it is not needed to
run this experiment).

Instance: d = 5, X = Z = {e_1, ..., e_5, x'}, x' = cos(0.1) e_1 + sin(0.1) e_2, theta = 2 e_1,
standard normal noise, delta = 0.05.  Rows: the released configuration (``complexity="mixed"``)
and the rho-only version; the mean number of samples with its standard error, the errors, and
two-sided p-values of the difference of means (normal approximation, independent samples).
"""
from __future__ import annotations

import math

NAME = "peace_fixed_confidence"
DESCRIPTION = "Fixed-confidence Peace vs a NumPy reference and the authors' released run (Soare d = 5, omega = 0.1)"

D, OMEGA, DELTA = 5, 0.1, 0.05

#: the authors' released ``lin_tb_alg`` on this instance: (mean samples, standard error, runs, errors),
#: 150 runs of their code (numpy seed 2026; PyTorch 2.13.0+cpu; 2026-11-28); it has no rho-only switch
RELEASED: dict[str, tuple[float, float, int, int]] = {"mixed": (39703.3, 1978.2, 150, 0)}


def _p_two_sided(m1, s1, m2, s2):
    z = (m1 - m2) / math.hypot(s1, s2)
    return z, math.erfc(abs(z) / math.sqrt(2.0))


def run(ctx):
    import numpy as np

    from jaxbandits.algorithms import FixedConfidencePeace
    from jaxbandits.instances.seeds import soare_benchmark

    from experiments._runner import reference_module

    ref = reference_module("fc_peace_reference")
    reps = ctx.n_reps(2000, 200)
    ref_reps = {"rho": ctx.n_reps(400, 40), "mixed": ctx.n_reps(100, 10)}
    inst = soare_benchmark(D, omega=OMEGA, theta_scale=2.0, noise=1.0)
    X, theta = ref.soare(D, OMEGA)
    rows = []
    for cx in ("mixed", "rho"):
        res = ctx.simulate(dict(setting=f"Soare d={D} omega={OMEGA}", algorithm="FixedConfidencePeace", complexity=cx),
                           FixedConfidencePeace(delta=DELTA, complexity=cx), inst, reps, 80)
        s = np.asarray(res.samples, float).ravel()
        ours = (s.mean(), s.std(ddof=1) / math.sqrt(s.size))
        rng = np.random.default_rng(ctx.seed + (0 if cx == "mixed" else 1))
        out = [ref.run(X, X, theta, DELTA, rng, mixed=cx == "mixed") for _ in range(ref_reps[cx])]
        r = np.array([n for _, n in out])
        theirs = (r.mean(), r.std(ddof=1) / math.sqrt(r.size))
        z, p = _p_two_sided(*ours, *theirs)
        row = dict(complexity=cx, runs=s.size, mean=round(ours[0], 1), se=round(ours[1], 1),
                   errors=int((~np.asarray(res.correct).ravel()).sum()),
                   reference_runs=r.size, reference_mean=round(theirs[0], 1), reference_se=round(theirs[1], 1),
                   reference_errors=sum(a != 0 for a, _ in out), z_vs_reference=round(z, 2), p_vs_reference=round(p, 4))
        released = RELEASED.get(cx)
        if released is not None:
            zr, pr = _p_two_sided(*ours, released[0], released[1])
            row.update(released_runs=released[2], released_mean=released[0], released_se=released[1],
                       released_errors=released[3], z_vs_released=round(zr, 2), p_vs_released=round(pr, 4))
        else:
            row.update({k: "-" for k in ("released_runs", "released_mean", "released_se", "released_errors",
                                         "z_vs_released", "p_vs_released")})
        rows.append(row)
    ctx.table(rows, NAME, f"Fixed-confidence Peace on Soare et al.'s instance (d = {D}, omega = {OMEGA}, theta = 2 e_1, "
              f"sigma = 1, delta = {DELTA}): mean samples +- SE, ours (JAX) beside the NumPy reference and the "
              "authors' released lin_tb_alg (mixed design only: the released code has no rho-only switch); "
              "two-sided p-values of the difference of means.")
