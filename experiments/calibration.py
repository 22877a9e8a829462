"""Calibration of every fixed-confidence and Top-m algorithm: error rate against
delta and sample complexity against references, at sigma in {1/2, 1, 3} and delta in {0.05, 0.2},
on small-gap instances; plus the mutations that the checks must catch.

What is run and checked is defined in :mod:`jaxbandits.calibration` (instances, references, the
scaling law behind the sigma grid, the three checks and the level).  In short: at noise sigma the
instance is the seed's (seed 003 Fig. 1(b) hard Top-1 for best-arm identification, Fig. 1(a)
classic K = 4, m = 2 for Top-m; for the K-armed algorithms, Gaussian arms with Garivier & Kaufmann
2016's means mu1 = (0.5, 0.45, 0.43, 0.4)) with theta scaled by sigma / (1/2), so every grid point is the same
problem in units of sigma and the sigma = 1 run is the exact reference of the others (for
algorithms that use sigma where their paper does); published references are the released code's
500-run outputs of seed 003 (mean and sd, with their file).

Tables (Markdown, and ``calibration.csv`` / ``mutations.csv`` with every column):

* ``calibration``: algorithm x sigma x delta: runs, errors (+ capped), error rate with its
  Clopper-Pearson interval and the binomial p-value, mean +- SE, ratio to the lower bound
  sigma^2 T* kl(delta, 1 - delta), the scaling check against sigma = 1 (ratio, p-values), the
  published reference and its p-value, the verdict;
* ``mutations``: at sigma = 3 and delta = 0.05, each algorithm with a ``sigma`` option run with
  sigma = 1 ("sigma ignored", widths 3x too small) and sigma = 3 / sqrt(3) (a sigma^2 threshold 3x
  too small), same checks against the unmutated sigma = 1 run: the verdict must be FAIL;
* ``table1``: seed 000 Table 1 at K = 1000 (20 instances of the released code's generator, sigma
  = 1, delta = 0.05): LT&S (both variants, the text's choices), RAGE and the released XY_ORACLE
  configuration against the paper's means, the bracket read as a standard error over 20 runs;
* ``verdicts``: pass/fail counts per algorithm.

Algorithms that have no ``sigma`` option on this branch get "not run" mutation rows; rows whose
configuration cannot be built (e.g. ``released_code()`` missing) are "not run" rows, never passes.
Each run's label carries :func:`jaxbandits.calibration.code_version` (a hash of the configuration
and of the source files it depends on), so a rerun into the same ``--out`` reads back only the
configurations whose code did not change and recomputes the others.

Size: 500 replications per configuration (the seeds' count; RAGE at K = 1000: 100), ``--quick``:
40 and a subset of algorithms.  Measured on the shared 2-core machine (load average 10-12 from
other sessions): the full run, 172 simulations (23 configurations x 2 deltas x 3 sigmas, 30
mutation rows, 4 Table 1 rows), took 1512 s (25 min), most of it compilation (the runner restarted
once in a fresh process at the memory-mapping limit and read the finished runs back); a rerun
after an LT&S change recomputed only the LT&S rows in 198 s, after the RAGE / XY / ALBA / Oracle
sigma change only theirs in 322 s; ``--quick`` 307 s.
"""
from __future__ import annotations

import csv
import math

NAME = "calibration"
DESCRIPTION = "Calibration: error vs delta and sample complexity vs references, sigma x delta grid, with mutations"

MUTATION_DELTA = 0.05
QUICK_CASES = ("UniformGLR", "LT&S", "RAGE", "m-LinGapE (greedy)", "Track-and-Stop (D) [K-armed]")


def _write_csv(path, rows):
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)


SHOW = ["algorithm", "instance", "sigma", "delta", "option", "runs", "errors", "capped", "error_rate", "error_CI95", "p_error",
        "mean", "se", "ratio_LB", "p_LB", "ratio_to_unit", "p_scaling", "published", "p_published", "verdict"]


def _show(rows):
    return [{k: r.get(k, "") for k in SHOW} for r in rows]


def run(ctx):
    import os

    from jaxbandits import calibration as cal
    from jaxbandits.tables import paper_notes

    reps = ctx.n_reps(500, 40)
    all_cases = cal.cases()
    if ctx.quick:
        all_cases = [c for c in all_cases if c.label in QUICK_CASES]
    # JAXBANDITS_CALIBRATION_CASES="LinGame,FWS": only the cases whose label contains one of these
    only = [x for x in os.environ.get("JAXBANDITS_CALIBRATION_CASES", "").split(",") if x]
    if only:
        all_cases = [c for c in all_cases if any(x in c.label for x in only)]
    # JAXBANDITS_CALIBRATION_DELTAS="0.2": only these deltas of the grid (mutations run at 0.05 only)
    only_deltas = [float(x) for x in os.environ.get("JAXBANDITS_CALIBRATION_DELTAS", "").split(",") if x]
    deltas = tuple(d for d in cal.DELTAS if not only_deltas or any(math.isclose(d, x) for x in only_deltas))
    ctx.config = dict(reps=reps, sigmas=cal.SIGMAS, deltas=deltas, alpha=cal.ALPHA, band=cal.APPROX_BAND,
                      reg=cal.REG, cases=[c.label for c in all_cases])
    # per case: an epsilon-best-arm case has its own bound (T_eps); labels repeat across instances
    lbs = {(c.label, c.instance, d): cal.lower_bound(c.instance, d, c.epsilon) for c in all_cases for d in cal.DELTAS}
    rows, mut_rows, checks = [], [], []

    def sim(case, alg, sigma, delta, option=""):
        label = dict(algorithm=case.label, instance=case.instance, sigma=sigma, delta=delta, option=option,
                     code=cal.code_version(alg))
        res = ctx.simulate(label, alg, cal.calibration_instance(case.instance, sigma), reps, case.max_steps)
        return res.samples.ravel(), res.correct.ravel(), res.stopped.ravel()

    for case in all_cases:
        for delta in deltas:
            try:
                case.algorithm(delta)  # a case that cannot be configured is reported, not run
            except (TypeError, AttributeError) as e:
                rows.append(dict(algorithm=case.label, instance=case.instance, delta=delta, verdict=f"not run: {e}"))
                continue
            out = {s: sim(case, case.algorithm(delta, noise=s), s, delta) for s in cal.SIGMAS}
            unit = out[cal.UNIT_SIGMA]
            for s in cal.SIGMAS:
                samples, correct, stopped = out[s]
                pub = (cal.PUBLISHED.get(case.reference) if case.reference is not None
                       and s == cal.SIGMA0 and delta == 0.05 else None)
                rows.append(cal.calibration_row(
                    case, s, delta, samples, correct, stopped,
                    unit_samples=None if s == cal.UNIT_SIGMA else unit[0], unit_capped=not unit[2].all(),
                    lower_bound=lbs[(case.label, case.instance, delta)], published=pub))
                if pub is not None:
                    checks.append(published_check(rows[-1], pub, f"{case.label} on {case.instance}, sigma = {s:g}, "
                                                                 f"delta = {delta:g}"))
            # mutations at sigma = 3 and delta = MUTATION_DELTA, through the sigma option
            s = 3.0
            if delta != MUTATION_DELTA:
                continue
            for name, sig in cal.mutations(s).items():
                try:
                    malg = case.algorithm(delta, sigma=sig, noise=s)
                except TypeError as e:
                    mut_rows.append(dict(algorithm=case.label, instance=case.instance, sigma=s, delta=delta, option=name,
                                         verdict=f"not run: {e}"))
                    continue
                samples, correct, stopped = sim(case, malg, s, delta, option=name)
                mut_rows.append(cal.calibration_row(
                    case, s, delta, samples, correct, stopped, unit_samples=unit[0],
                    unit_capped=not unit[2].all(), lower_bound=lbs[(case.label, case.instance, delta)], option=name))
            _write_csv(ctx.out / "calibration.csv", rows)
            _write_csv(ctx.out / "mutations.csv", mut_rows)

    _write_csv(ctx.out / "calibration.csv", rows)  # also when no delta of the run had mutations
    _write_csv(ctx.out / "mutations.csv", mut_rows)
    ctx.table(_show(rows), "calibration",
              f"Calibration: {reps} runs per row, level {cal.ALPHA:g} per check (jaxbandits.calibration)",
              notes=paper_notes(checks, "the released code's published results"))
    ctx.table(_show(mut_rows), "mutations",
              "Mutations at sigma = 3 through the sigma option (each verdict must be FAIL)")
    verdicts = {}
    def entry(r):
        name = f"{r['algorithm']} ({r.get('instance') or '-'})"
        return verdicts.setdefault(name, dict(algorithm=name, rows=0, passed=0, failed=0, failures=""))

    for r in rows:
        v = entry(r)
        v["rows"] += 1
        if r["verdict"] == "pass":
            v["passed"] += 1
        else:
            v["failed"] += 1
            v["failures"] += f"sigma={r.get('sigma', '?')} delta={r['delta']}: {r['verdict']}; "
    for r in mut_rows:
        v = entry(r)
        v["mutations_caught"] = v.get("mutations_caught", 0) + int(str(r["verdict"]).startswith("FAIL"))
        v["mutations_run"] = v.get("mutations_run", 0) + int(not str(r["verdict"]).startswith("not run"))
    ctx.table(list(verdicts.values()), "verdicts", "Verdicts per algorithm (grid rows; mutations caught / run)")
    n_fail = sum(r["verdict"] != "pass" for r in rows)
    ctx.log(f"[calibration] {len(rows) - n_fail}/{len(rows)} grid rows pass; "
            f"{sum(str(r['verdict']).startswith('FAIL') for r in mut_rows)}/"
            f"{sum(not str(r['verdict']).startswith('not run') for r in mut_rows)} mutations caught")
    if not ctx.quick and not only and deltas == tuple(cal.DELTAS):  # a filtered run: the filtered rows only
        run_table1(ctx, reps)


#: known causes of a disagreement of the Table 1 rows with the paper: seed000_table1's, for the
#: configurations that are the same (the text's LT&S choices, released-code generator)
TABLE1_CAUSES = {"LT&S (no averaging)": ("code", "LT&S (no averaging) [paper]"), "LT&S": ("code", "LT&S [paper]")}


def published_check(row, ref, label, cause=None):
    """A calibration row's mean (SE) against a published reference (:func:`jaxbandits.tables.paper_check`:
    flagged beyond |z| = 3; the row's verdict applies its own Welch test at level ``ALPHA``)."""
    from jaxbandits.tables import paper_check

    return paper_check(label, (row.get("mean", math.nan), row.get("se", math.nan)), (ref.mean, ref.se), cause,
                       n=row.get("runs"), paper_n=ref.n)


def run_table1(ctx, reps):
    """Seed 000 Table 1 at K = 1000 against the paper's numbers (rows of the ``table1`` table)."""
    import jax

    from jaxbandits import calibration as cal

    from experiments.seed000_table1 import CAUSES
    from jaxbandits.tables import paper_notes

    delta = 0.05
    rows, checks = [], []
    t1_inst = cal.table1_instances(jax.random.fold_in(ctx.key, cal.TABLE1_K))
    lb = cal.table1_lower_bound(t1_inst, delta)
    for case in cal.table1_cases():
        n = reps if case.label != "RAGE" else min(reps, 100)  # RAGE: its XY design over M^2 pairs dominates
        nr = max(1, math.ceil(n / cal.TABLE1_INSTANCES))
        try:
            alg = case.algorithm(delta)
            res = ctx.simulate(dict(table1=cal.TABLE1_K, algorithm=case.label, delta=delta, code=cal.code_version(alg)),
                               alg, t1_inst, nr, case.max_steps)
        except Exception as e:  # reported, never hidden
            rows.append(dict(algorithm=case.label, verdict=f"not run: {type(e).__name__}: {e}"))
            continue
        rows.append(cal.calibration_row(case, 1.0, delta, res.samples.ravel(), res.correct.ravel(),
                                        res.stopped.ravel(), lower_bound=lb, published=cal.TABLE1[case.label]))
        checks.append(published_check(rows[-1], cal.TABLE1[case.label], f"{case.label}, K = {cal.TABLE1_K:,}",
                                      CAUSES.get(TABLE1_CAUSES.get(case.label))))
    _write_csv(ctx.out / "table1.csv", rows)
    ctx.table(_show(rows), "table1", f"Seed 000 Table 1 (K = {cal.TABLE1_K}, {cal.TABLE1_INSTANCES} instances of "
              "the released code's generator, sigma = 1, delta = 0.05) against the paper's numbers",
              notes=paper_notes(checks, "the paper's Table 1"))
    return rows
