"""Every K-armed baseline of the library beside an independent NumPy implementation written from its
paper (``benchmarks/karmed_reference.py``, vectorised over the replications, its own random stream,
sharing no code with the library), on one instance per setting, with the replications' run time per
replication of each.

Fixed confidence: Garivier & Kaufmann 2016's Bernoulli scenario mu2 = (0.3, 0.21, 0.2, 0.19, 0.18)
(:func:`jaxbandits.instances.garivier_kaufmann_2016`), delta = 0.1, each arm pulled once first, the
stopping rules of each paper as the library builds them: Chernoff's GLR at log((1 + log t) / delta)
(Track-and-Stop, the Top Two family, as in Garivier & Kaufmann's and Jourdan et al.'s experiments),
KL-LUCB's bounds at the same level, LUCB1's beta = log(5 K t^4 / (4 delta)) with sigma = 1/2,
lil'UCB's paper preset (eps = 0.01, beta = 1, lambda = 9), Successive Elimination's
alpha_t = sqrt(log(4 K t^2 / delta) / t).  EB-TCε (eps = eps0 = 0.1, IDS, delta = 0.01) is for Gaussian
arms of known variance: its row has mu2's means as Gaussian arms with sigma = 1 (answers within eps of
the best are correct).  Every row: the mean
stopping time +- SE of each implementation, the two-sided z-test of the means, the
Kolmogorov-Smirnov test of the laws, the errors, and the lower bound T*(mu) kl(delta, 1 - delta)
(T_eps for EB-TCε).

Fixed budget: Audibert & Bubeck 2010's experiment 4 (mu = (0.5, 0.42, 0.4, 0.4, 0.35, 0.35),
Bernoulli) at budget n = 2000: Successive Rejects and Sequential Halving, the error rate of each
implementation and the two-proportion z-test.

The papers' own tables and figures could not be read where this experiment was written (no copy
was reachable), so no row is compared with a published number: the comparison is with the
independent implementation and with the lower bound.  Bernoulli TTTS evaluates K^2 x 256
incomplete beta functions a step (its challenger's quadrature: about 0.1 s a step for 4 replications
on 2 CPU cores), so TTTS's row has mu2's means as Gaussian arms with sigma = 1/2 and a fifth of the
replications; so have the NumPy Track-and-Stops (w* solved at every step by nested root finding).

``--quick``: 100 runs per row (20 for those); default: 1000 (200 for those).  Run time per replication:
ours is the engine's wall time (compile excluded) over the replications, through one process on the
machine's cores; the NumPy implementation's is its wall time over the same number of replications.

Measured (default size, seed 0, 2 CPU cores, 925 s; runs: ours / theirs):

======================  ===========  ==============  ==============  =====  ====  =====  ===============
algorithm               runs         ours            NumPy           z      KS p  /LB    ms/run ours/NumPy
======================  ===========  ==============  ==============  =====  ====  =====  ===============
Track-and-Stop (D)      1000 / 200   1,387 +- 31     1,380 +- 62     0.10   0.88  2.42   31.9 / 1,564
Track-and-Stop (C)      1000 / 200   1,757 +- 28     1,719 +- 65     0.54   0.11  3.06   34.9 / 1,245
EB-TC                   1000 / 1000  3,671 +- 284    3,829 +- 329    -0.36  0.26  6.39   3.2 / 32.1
EB-TCI                  1000 / 1000  1,580 +- 27     1,559 +- 25     0.57   0.31  2.75   1.0 / 1.2
EB-TC (IDS)             1000 / 1000  3,737 +- 286    3,937 +- 351    -0.44  0.69  6.51   3.6 / 27.1
T3C                     1000 / 1000  1,406 +- 23     1,403 +- 24     0.08   0.95  2.45   6.3 / 2.9
TTTS (Gaussian)         200 / 1000   2,159 +- 74     2,075 +- 31     1.05   0.59  2.84   437 / 9.8
KL-LUCB                 1000 / 1000  2,800 +- 100    2,577 +- 30     2.14   0.34  4.88   30.4 / 25.1
LUCB1                   1000 / 1000  36,968 +- 118   37,146 +- 112   -1.10  0.50  64.4   7.1 / 2.8
lil'UCB                 1000 / 1000  25,682 +- 139   25,622 +- 138   0.30   0.99  44.7   5.7 / 5.0
Successive Elimination  1000 / 1000  46,818 +- 170   47,152 +- 163   -1.42  0.29  81.5   27.5 / 6.0
EB-TCε (IDS)            1000 / 1000  2,830 +- 37     2,810 +- 37     0.39   0.69  1.45   0.7 / 1.8
======================  ===========  ==============  ==============  =====  ====  =====  ===============

/LB: our mean over the lower bound, T*(mu2) kl(0.1, 0.9) = 574 (Bernoulli), 760 (TTTS's Gaussian
arms), T_eps kl(0.01, 0.99) = 1,958 (EB-TCε).  Errors (ours / theirs): at most 5 / 3 in 1000.
Fixed budget, 10,000 runs each: Successive Rejects errs 0.0075 (NumPy 0.0072, z = 0.25),
Sequential Halving 0.0314 (0.0327, z = -0.52).  KL-LUCB's means differ at p = 0.03 while its laws
agree (KS p = 0.34): a few very long runs (in both implementations: beyond 10^5 pulls) carry its
mean and its SE.
"""
from __future__ import annotations

import math
import time

NAME = "karmed_baselines"
DESCRIPTION = ("Every K-armed baseline (Track-and-Stop, Top Two, LUCB, lil'UCB, elimination, Successive Rejects, "
               "Sequential Halving) beside an independent NumPy implementation, with the lower bound and the run time")

DELTA = 0.1
BUDGET = 2000
#: Audibert & Bubeck 2010, Sec 5, experiment 4 (Bernoulli)
AUDIBERT_BUBECK_4 = (0.5, 0.42, 0.4, 0.4, 0.35, 0.35)
CAP = 10_000_000
#: TTTS's row: mu2's means as Gaussian arms of this standard deviation (about the Bernoulli arms')
TTTS_SIGMA = 0.5
#: rows run with a fifth of the replications: ours (Bernoulli TTTS's quadrature of incomplete beta
#: functions) and the NumPy implementation's (Track-and-Stop's w* by nested root finding at every step)
FEWER_OURS = ("TTTS",)
FEWER_REFERENCE = ("Track-and-Stop (D)", "Track-and-Stop (C)")


def fixed_confidence_rows():
    """(name, paper, library algorithm, reference call (rng, mu, reps) -> (samples, answers), family)."""
    from jaxbandits.algorithms import (KArmedEBTCEpsilon, KArmedKLLUCB, KArmedLilUCB, KArmedLUCB1,
                                       KArmedTopTwo, KArmedTrackAndStop, SuccessiveElimination)
    from experiments._runner import reference_module

    ref = reference_module("karmed_reference")
    d = DELTA
    return [
        ("Track-and-Stop (D)", "Garivier & Kaufmann 2016", KArmedTrackAndStop(delta=d, tracking="D"),
         lambda r, mu, n: ref.track_and_stop(r, mu, d, n, tracking="D"), "bernoulli"),
        ("Track-and-Stop (C)", "Garivier & Kaufmann 2016", KArmedTrackAndStop(delta=d, tracking="C"),
         lambda r, mu, n: ref.track_and_stop(r, mu, d, n, tracking="C"), "bernoulli"),
        ("EB-TC", "Jourdan et al. 2022", KArmedTopTwo(delta=d),
         lambda r, mu, n: ref.eb_top_two(r, mu, d, n), "bernoulli"),
        ("EB-TCI", "Jourdan et al. 2022", KArmedTopTwo(delta=d, challenger="TCI"),
         lambda r, mu, n: ref.eb_top_two(r, mu, d, n, challenger="TCI"), "bernoulli"),
        ("EB-TC (IDS)", "You et al. 2023", KArmedTopTwo(delta=d, selection="ids"),
         lambda r, mu, n: ref.eb_top_two(r, mu, d, n, selection="ids"), "bernoulli"),
        ("T3C", "Shang et al. 2020", KArmedTopTwo(delta=d, leader="TS"),
         lambda r, mu, n: ref.thompson_top_two(r, mu, d, n), "bernoulli"),
        ("TTTS", "Russo 2016", KArmedTopTwo(delta=d, leader="TS", challenger="TS"),
         lambda r, mu, n: ref.thompson_top_two(r, mu, d, n, challenger="TS", gaussian=True, sigma=TTTS_SIGMA),
         "gaussian"),
        ("KL-LUCB", "Kaufmann & Kalyanakrishnan 2013", KArmedKLLUCB(delta=d),
         lambda r, mu, n: ref.kl_lucb(r, mu, d, n), "bernoulli"),
        ("LUCB1", "Kalyanakrishnan et al. 2012", KArmedLUCB1(delta=d),
         lambda r, mu, n: ref.lucb1(r, mu, d, n), "bernoulli"),
        ("lil'UCB", "Jamieson et al. 2014", KArmedLilUCB(delta=d),
         lambda r, mu, n: ref.lil_ucb(r, mu, d, n), "bernoulli"),
        ("Successive Elimination", "Even-Dar et al. 2006", SuccessiveElimination(delta=d),
         lambda r, mu, n: ref.successive_elimination(r, mu, d, n), "bernoulli"),
        ("EB-TCε (IDS), eps = 0.1, delta = 0.01", "Jourdan, Degenne & Kaufmann 2023",
         KArmedEBTCEpsilon(delta=0.01, epsilon=0.1),
         lambda r, mu, n: ref.eb_tc_epsilon(r, mu, 0.01, n, epsilon=0.1, epsilon0=0.1, sigma=1.0), "epsilon"),
    ]


def _mean_se(x):
    import numpy as np

    x = np.asarray(x, float)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


def run(ctx):
    import jax.numpy as jnp
    import numpy as np

    from jaxbandits.algorithms import SequentialHalving, SuccessiveRejects
    from jaxbandits.calibration import ks_two_sample
    from jaxbandits.design import karmed
    from jaxbandits.instances import GARIVIER_KAUFMANN_2016, k_armed
    from jaxbandits.stats import kl_bernoulli

    from experiments._runner import reference_module

    ref = reference_module("karmed_reference")
    reps = ctx.n_reps(1000, 100)
    fewer = max(2, reps // 5)
    mu = np.asarray(GARIVIER_KAUFMANN_2016[2], float)
    ctx.config = dict(instance="garivier_kaufmann_2016(2)", delta=DELTA, reps=reps, fewer=fewer,
                      budget_instance=list(AUDIBERT_BUBECK_4), budget=BUDGET)
    rows = []
    for i, (name, paper, alg, reference, family) in enumerate(fixed_confidence_rows()):
        n = fewer if name in FEWER_OURS else reps
        n_ref = fewer if name in FEWER_REFERENCE else reps
        eps = 0.0
        if family == "bernoulli":
            inst, delta = k_armed(mu, "bernoulli"), DELTA
            T = float(karmed.characteristic_time(jnp.asarray(mu), "bernoulli"))
            where, bound = "mu2, Bernoulli", "T* kl"
        elif family == "gaussian":
            inst, delta = k_armed(mu, "gaussian", noise=TTTS_SIGMA), DELTA
            T = float(karmed.characteristic_time(jnp.asarray(mu), "gaussian", sigma=TTTS_SIGMA))
            where, bound = f"mu2, Gaussian sigma = {TTTS_SIGMA}", "T* kl"
        else:
            inst, delta, eps = k_armed(mu, "gaussian", noise=1.0), 0.01, 0.1
            T = float(karmed.epsilon_characteristic_time(jnp.asarray(mu), eps, sigma=1.0))
            where, bound = "mu2, Gaussian sigma = 1", "T_eps kl"
        res = ctx.simulate(dict(algorithm=name, instance=where, delta=delta), alg, inst, n, CAP)
        ours = np.asarray(res.samples, float).ravel()
        stopped = np.asarray(res.stopped).ravel()
        answer = np.asarray(res.answer).reshape(ours.size, -1).argmax(-1)
        t0 = time.perf_counter()
        theirs, rec = reference(np.random.default_rng(ctx.seed + 1 + i), mu, n_ref)
        ref_seconds = time.perf_counter() - t0
        theirs = np.asarray(theirs, float)
        good = mu >= mu.max() - eps - 1e-12
        o_mean, o_se = _mean_se(ours)
        r_mean, r_se = _mean_se(theirs)
        z = (o_mean - r_mean) / math.hypot(o_se, r_se)
        _, p_ks = ks_two_sample(ours, theirs)
        lb = T * kl_bernoulli(delta, 1 - delta)
        ours_seconds = float(res.wall_time)
        rows.append(dict(algorithm=name, paper=paper, instance=where, delta=delta, runs=f"{n} / {theirs.size}",
                         capped=int((~stopped).sum()),
                         ours=f"{o_mean:,.0f} +- {o_se:,.0f}", numpy_reference=f"{r_mean:,.0f} +- {r_se:,.0f}",
                         z=round(z, 2), p_mean=round(math.erfc(abs(z) / math.sqrt(2.0)), 3), p_ks=round(p_ks, 3),
                         errors=f"{int((~good[answer] | ~stopped).sum())} / {int((~good[np.asarray(rec)]).sum())}",
                         lower_bound=f"{lb:,.0f} ({bound})", ours_over_bound=round(o_mean / lb, 2),
                         ours_ms_per_run=(round(1e3 * ours_seconds / n, 3) if ours_seconds > 0 else "read back"),
                         numpy_ms_per_run=round(1e3 * ref_seconds / n_ref, 3)))
    ctx.table(rows, "fixed_confidence",
              f"Fixed confidence, Garivier & Kaufmann 2016's mu2 (Bernoulli), delta = {DELTA}: mean stopping time "
              "+- SE of ours and of an independent NumPy implementation of each paper's algorithm (runs: ours / "
              "theirs), the two-sided z-test of the means and the Kolmogorov-Smirnov test of the laws, errors "
              "(ours / theirs), the lower bound, and the run time per replication (ours: compile excluded). The "
              "papers' published numbers could not be read here: no row is compared with them.")

    budget_mu = np.asarray(AUDIBERT_BUBECK_4, float)
    inst = k_armed(budget_mu, "bernoulli")
    runs = 10 * reps
    budget_rows = []
    for i, (name, paper, alg, reference) in enumerate((
            ("Successive Rejects", "Audibert & Bubeck 2010", SuccessiveRejects(budget=BUDGET), ref.successive_rejects),
            ("Sequential Halving", "Karnin et al. 2013", SequentialHalving(budget=BUDGET), ref.sequential_halving))):
        res = ctx.simulate(dict(algorithm=name, instance="Audibert & Bubeck 2010 experiment 4", budget=BUDGET),
                           alg, inst, runs, budget_mu.size)
        wrong = int((~np.asarray(res.correct).ravel()).sum())
        t0 = time.perf_counter()
        rec, pulls = reference(np.random.default_rng(ctx.seed + 100 + i), budget_mu, BUDGET, runs)
        ref_seconds = time.perf_counter() - t0
        wrong_ref = int((np.asarray(rec) != 0).sum())
        p = (wrong + wrong_ref) / (2 * runs)
        z = (wrong - wrong_ref) / runs / math.sqrt(max(p * (1 - p), 1e-12) * 2 / runs)
        ours_seconds = float(res.wall_time)
        budget_rows.append(dict(algorithm=name, paper=paper, budget=BUDGET, runs=runs,
                                ours_error=round(wrong / runs, 4), numpy_error=round(wrong_ref / runs, 4),
                                z=round(z, 2), p=round(math.erfc(abs(z) / math.sqrt(2.0)), 3),
                                pulls_ours=int(np.asarray(res.samples).max()), pulls_numpy=int(pulls.sum(axis=1).max()),
                                ours_ms_per_run=(round(1e3 * ours_seconds / runs, 4) if ours_seconds > 0
                                                 else "read back"),
                                numpy_ms_per_run=round(1e3 * ref_seconds / runs, 4)))
    ctx.table(budget_rows, "fixed_budget",
              f"Fixed budget, Audibert & Bubeck 2010's experiment 4 {AUDIBERT_BUBECK_4} (Bernoulli), n = {BUDGET}: "
              "the error rate of ours and of an independent NumPy implementation, two-proportion z-test, the most "
              "pulls a run spent, run time per replication.")
