"""The benchmark's one-line verdict per algorithm of yours: delta-correctness on every instance
(exact binomial tests, Bonferroni) and E[tau] against the best baseline of each instance (fixed
budget: the error rate).  It is computed from the per-instance table, so a changed table changes
it; the report and the command line print it.  No program is compiled here: the tables are built
from synthetic runs, and the benchmark's sweeps are replaced by a stand-in that returns them."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jaxbandits import benchmarking as bm
from test_progress import _fake_sweep  # the benchmark's sweeps replaced by synthetic rows

FC = bm.SUITES["fixed-confidence"]
ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = f"{ROOT / 'docs' / 'examples' / 'gopt_tracking.py'}:GOptTracking"


def _table(spec, suite=FC, n=20, delta=0.05):
    """The tidy table of synthetic runs: ``spec`` maps an algorithm to (kind, mean stopping time,
    errors on each instance); three instances, ``n`` runs each, spread +-2 around the mean."""
    rows = []
    for alg, (kind, mu, errors) in spec.items():
        for i, e in enumerate(errors):
            for r in range(n):
                rows.append(dict(algorithm=alg, kind=kind, set="soare", point=json.dumps({"d": 2}), instance=i,
                                 delta=delta, samples=mu * (1 + i) + (r % 5 - 2), correct=r >= e, stopped=True,
                                 lower_bound=10.0))
    return bm.tidy_table(pd.DataFrame(rows), suite)


def test_verdict_states_correctness_and_speed_against_the_best_baseline():
    t = _table({"mine": ("yours", 100, [0, 1, 0]), "LT&S": ("baseline", 200, [0, 0, 0]),
                "RAGE": ("baseline", 400, [0, 0, 0])})
    (line,) = bm.verdict(t, FC)
    assert line.startswith("mine: delta-correct on 3/3 instances (1 errors in 60 runs; exact binomial test")
    assert "E[tau] 0.5x the best baseline's (median over 3 instances, 0.5x to 0.5x)" in line
    assert "fastest on 3/3, faster by > 2 SE on 3/3, slower by > 2 SE on 0/3" in line
    assert "best baseline most often LT&S (3/3)" in line and "\n" not in line

    # the same runs with the baselines' table changed: LT&S four times faster flips the comparison
    t2 = t.copy()
    t2.loc[t2["algorithm"] == "LT&S", "mean"] /= 4
    (line2,) = bm.verdict(t2, FC)
    assert "E[tau] 2x the best baseline's" in line2
    assert "fastest on 0/3, faster by > 2 SE on 0/3, slower by > 2 SE on 3/3" in line2

    # RAGE the best on one instance: named by how often it is the best
    t3 = t.copy()
    t3.loc[(t3["algorithm"] == "RAGE") & (t3["instance"] != 0), "mean"] = 1.0
    (line3,) = bm.verdict(t3, FC)
    assert "best baseline most often RAGE (2/3)" in line3 and "fastest on 1/3" in line3


def test_verdict_fails_delta_correctness_by_exact_binomial_tests():
    base = ("baseline", 200, [0, 0, 0])
    # 3 errors in 20 runs at delta = 0.05: p = 0.075, not rejected; 6 errors: p = 3e-4 < 0.05 / 3
    ok = bm.verdict(_table({"mine": ("yours", 100, [3, 0, 3]), "LT&S": base}), FC)[0]
    assert "delta-correct on 3/3 instances (6 errors in 60 runs" in ok
    bad = bm.verdict(_table({"mine": ("yours", 100, [0, 6, 0]), "LT&S": base}), FC)[0]
    assert bad.startswith("mine: NOT delta-correct on 1/3 instances (worst soare d=2 instance 1: 6/20 errors "
                          "at delta = 0.05, p = 0.00033;")
    # a baseline's errors say nothing about yours
    assert "NOT" not in bm.verdict(_table({"mine": ("yours", 100, [0, 0, 0]), "LT&S": ("baseline", 200, [9, 9, 9])}),
                                   FC)[0]


def test_verdict_counts_capped_runs_and_handles_no_baseline():
    t = _table({"mine": ("yours", 100, [0, 0, 0]), "LT&S": ("baseline", 200, [0, 0, 0])})
    t.loc[(t["algorithm"] == "mine") & (t["instance"] == 2), ["frac_capped", "mean_is_lower_bound"]] = (0.1, True)
    (line,) = bm.verdict(t, FC)
    assert "2 capped counted as errors" in line and "capped runs on 1 instance(s), whose means are lower bounds" in line
    (alone,) = bm.verdict(t[t["kind"] == "yours"], FC)
    assert alone.endswith("; no baseline ran on its instances.") and "E[tau]" not in alone


def test_verdict_of_a_fixed_budget_suite_compares_error_rates():
    fb = bm.SUITES["fixed-budget"]
    t = _table({"mine": ("yours", 50, [2, 2, 2]), "GSE": ("baseline", 50, [10, 10, 10])}, suite=fb, delta=np.nan)
    (line,) = bm.verdict(t, fb)
    assert line.startswith("mine: error rate 0.1 (6/60 runs on 3 instance(s)) against 0.5 for the best baseline")
    assert "lowest or tied on 3/3" in line and "below it on 3/3" in line and "delta-correct" not in line


@pytest.fixture
def tiny_suite(monkeypatch):
    s = FC
    tiny = dataclasses.replace(s, name="tiny-verdict", sets=(dataclasses.replace(s.sets[0], quick_grid={"d": [2, 3]},
                                                                                 n_reps=(6, 6)),),
                               quick_baselines=("LT&S", "UniformGLR"))
    monkeypatch.setitem(bm.SUITES, "tiny-verdict", tiny)
    return tiny


def test_report_and_command_line_end_with_the_verdict(tiny_suite, monkeypatch, tmp_path, capsys):
    from jaxbandits import cli, sweeps

    monkeypatch.setattr(bm, "write_figures", lambda *a, **k: [])  # the figures are not what is tested

    def run(out, means):
        monkeypatch.setattr(sweeps, "sweep", _fake_sweep(means))
        rc = cli.main(["benchmark", f"mine={TUTORIAL}", "--suite", "tiny-verdict", "--quick", "--out", str(out),
                       "--no-progress", "--no-compile-cache"])
        assert rc == 0
        printed = capsys.readouterr().out.rstrip().splitlines()
        report = (out / "tiny-verdict-v2-quick" / "report.md").read_text()
        meta = json.loads((out / "tiny-verdict-v2-quick" / "metadata.json").read_text())
        return printed, report, meta

    printed, report, meta = run(tmp_path / "a", {"mine": 50, "LT&S": 100, "UniformGLR": 400})
    verdict = ("mine: delta-correct on 2/2 instances (0 errors in 12 runs; exact binomial test of error <= delta "
               "per instance, Bonferroni level 0.05); E[tau] 0.5x the best baseline's (median over 2 instances, "
               "0.5x to 0.5x); fastest on 2/2")
    assert printed[-1].startswith(f"[benchmark] {verdict}") and "best baseline most often LT&S (2/2)" in printed[-1]
    assert f"**Verdict.** {verdict}" in report and meta["verdict"] == [printed[-1][len("[benchmark] "):]]
    # the baselines' numbers changed (UniformGLR now the fastest): the verdict follows
    printed, report, _ = run(tmp_path / "b", {"mine": 50, "LT&S": 100, "UniformGLR": 25})
    assert "E[tau] 2x the best baseline's" in printed[-1] and "slower by > 2 SE on 2/2" in printed[-1]
    assert "best baseline most often UniformGLR (2/2)" in printed[-1] and "**Verdict.** mine:" in report
