"""Seed 003 Table 3: empirical error frequencies (>= 500 runs per algorithm) with Clopper-Pearson
95% intervals, for the Fig. 1(a) algorithms (classic K = 4, m = 2, omega = pi/6) and Fig. 1(b)
(hard Top-1, K = 3, omega = 0.1).  Column (1)c (drug repurposing) is ``seed003_real_data``.

Paper (Table 3): every error is 0.0 except m-LinGapE (greedy) on Fig. 1(b): 0.044 (LinGame, the
Degenne et al. 2020 comparison of column (1)b: 0.0; run by :class:`jaxbandits.algorithms.LinGame`,
``released code`` = :meth:`~jaxbandits.algorithms.LinGame.released_code`).  Those numbers
come from the released code's runs, so every algorithm is run twice, side by side: ``paper``
(Algorithm 1: stopping on the pair chosen from the current data, eq. (2) tail sqrt(lambda) S / sigma)
and ``released code`` (:meth:`~jaxbandits.algorithms.top_m.gifa.GIFA.released_code`: stopping on the pair
chosen before the pull, tail lambda S / sigma).  The 0.044 is a property of the released stopping
rule: measured (seed003_fig1, 500 runs) 25/500 errors in released-code mode, 0/500 in paper mode.
"""
from __future__ import annotations

import math

NAME = "seed003_table3"
DESCRIPTION = "Seed 003 Table 3: error frequencies of the Top-m algorithms with Clopper-Pearson intervals"

PAPER = {("1a", n): 0.0 for n in (
    "m-LinGapE (greedy)", "m-LinGapE (optimized)", "LinGIFA (largest variance)",
    "LinGIFA (tau_LUCB, largest variance)", "LinGIFA (tau_LUCB, greedy)", "LinGIFA (greedy)",
    "LinGIFA (individual indices, largest variance)", "LUCB (largest variance)", "UGapE")}
PAPER.update({("1b", "m-LinGapE (greedy)"): 0.044, ("1b", "LinGIFA (greedy)"): 0.0, ("1b", "LinGame"): 0.0})
PAPER_RUNS = 500  #: the released code's runs behind every entry (Results/<setting>/<alg>.txt)
#: the measured cause of a disagreement with ``PAPER``, by (column, algorithm, mode)
CAUSES = {("1b", "m-LinGapE (greedy)", "paper"): (
    "the 0.044 is a property of the released code's stopping rule (the pair chosen before the last pull, tail "
    "lambda S / sigma), not of Algorithm 1: measured (seed003_fig1, 500 runs) 25/500 errors in released-code mode, "
    "0/500 in paper mode.")}


def run(ctx):
    from jaxbandits.algorithms import LinGame
    from jaxbandits.algorithms.top_m import gifa

    from experiments.seed003_fig1 import fig1a_algorithms
    from jaxbandits.instances.seeds import topm_classic, topm_hard_top1
    from jaxbandits.stats import clopper_pearson
    reps = ctx.n_reps(500, 20)
    delta = 0.05
    cols = [("1a", topm_classic(4, 2, omega=math.pi / 6), fig1a_algorithms(2, delta)),
            ("1b", topm_hard_top1(), [gifa.MLinGapE(1, delta, selection="greedy"),
                                       gifa.LinGIFA(1, delta, selection="greedy"), LinGame(delta=delta)])]
    if ctx.quick:
        cols = [("1a", cols[0][1], cols[0][2][:1]), ("1b", cols[1][1], cols[1][2][-1:])]
    difference = ("paper = Algorithm 1 (stopping checked on the pair (b_t, c_t) chosen from the current data; eq. (2) "
                  "tail sqrt(lambda) S / sigma); released code = stopping checked on the pair chosen before the last "
                  "pull, tail lambda S / sigma.  The paper column comes from the released code's runs, so it is the "
                  "released-code rows that should match it.")
    rows = []
    for col, inst, algs in cols:
        for alg in algs:
            for mode, a in (("paper", alg), ("released code", alg.released_code())):
                # same labels as seed003_fig1: a shared --out directory reuses its runs
                setting = ("classic K=4 m=2 omega=pi/6 (Fig. 1a)" if col == "1a" else "hard Top-1 K=3 omega=0.1 (Fig. 1b)")
                res = ctx.simulate(dict(setting=setting, algorithm=a.name), a, inst, reps, 2_000_000)
                stopped = res.stopped.ravel()
                n = int(stopped.sum())
                err = int((~res.correct.ravel()[stopped]).sum())
                lo, hi = clopper_pearson(err, n)
                rows.append(dict(column=col, algorithm=alg.name, mode=mode, runs=res.correct.size, stopped=n,
                                 errors=err, error=round(err / max(n, 1), 5), CI95=f"[{lo:.4f}, {hi:.4f}]",
                                 paper=PAPER.get((col, alg.name), float("nan"))))
    summary(ctx, rows, difference)


def check(row):
    """Our error frequency of one row against the paper's (:func:`jaxbandits.tables.paper_check_rate`,
    pooled over our stopped runs and the paper's ``PAPER_RUNS``), with its known cause."""
    from jaxbandits.tables import paper_check_rate

    key = (row["column"], row["algorithm"], row["mode"])
    return paper_check_rate(f"{row['algorithm']} ({row['mode']}), column (1){row['column'][-1]}",
                            (row["errors"], row["stopped"]), (row["paper"], PAPER_RUNS), CAUSES.get(key))


def summary(ctx, rows, difference=""):
    """Print and save ``table3.md``: the rows with their paper check, every disagreement and its cause."""
    from jaxbandits.tables import paper_notes

    checks = []
    for r in rows:
        c = check(r)
        r["vs_paper"] = c.cell
        checks.append(c)
    ctx.table(rows, "table3", "Seed 003 Table 3 (error frequencies; capped runs excluded from the error and "
              "counted in runs - stopped; paper column: seed 003 Table 3, from the released code's runs). " + difference,
              notes=paper_notes(checks, "the paper's Table 3"))
