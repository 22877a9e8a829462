"""``benchmarks/devices.py``: the study's lease plan holds every study row in a 15-minute lease, and
``study --quick`` runs a row end to end on the CPU and prints the study table."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import devices  # noqa: E402


def test_lease_plan_holds_every_study_row_in_a_15_minute_lease():
    budgets = [(row.name, row.budget) for row in devices.STUDY]
    commands, left = devices.lease_plan(budgets + [("other", 90.0)] * 5)
    planned = [n for c in commands for n in c]
    assert left and set(n for n, _ in budgets) <= set(planned)   # every study row, and not every row
    assert planned[:len(budgets)] == [n for n, _ in budgets]     # in the study's order, first
    spent = devices.LEASE_START_S
    for c in commands:
        secs = devices.COMMAND_OVERHEAD_S + sum(dict(budgets + [("other", 90.0)])[n] for n in c)
        assert secs <= devices.COMMAND_S
        spent += secs
    assert spent <= devices.LEASE_S


def test_lease_plan_reports_rows_that_no_command_holds():
    commands, left = devices.lease_plan([("a", 300.0), ("b", 600.0), ("c", 300.0), ("d", 300.0)])
    assert commands == [["a"], ["c"]] and left == ["b", "d"]


def test_study_quick_runs_a_row_end_to_end_on_the_cpu(tmp_path):
    out = tmp_path / "study"
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "devices.py"), "study", "--quick",
                        "--platform", "cpu", "--only", "SphereBAI", "--reps", "16", "--out", str(out)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "| workload | platform | lanes | reps | replications/s | lane efficiency | end to end s" in p.stdout
    rows = json.load(open(out / "rows.json"))
    (row,) = rows
    assert row["kind"] == "study" and row["complete"] and row["reps"] == 16 and row["e2e_s"] >= row["compile_s"]
    assert "SphereBAI" in open(out / "table.md").read()


def test_gpu_model_study_prediction_and_check(tmp_path, capsys):
    """``gpu_model.py --study``'s end to end prediction and verdict, and ``--check``: a row whose
    kernels per step rise by more than 2 % (or whose syncs or bytes per lane rise) fails."""
    import gpu_model

    row = dict(name="RAGE, Soare d=5", kernels_per_step=100.0, syncs_per_step=1.06, bytes_per_lane=330,
               compile_s=10.0, predicted_reps_per_s=50_000.0, lanes=262_144)
    target = devices.STUDY[0]
    row.update(gpu_model.study_prediction(row, target, 10**6))
    assert row["predicted_e2e_s"] == gpu_model.PROCESS_START_S + 10.0 + 20.0
    assert "target < 40 s: met" not in gpu_model.study_verdict(row)   # the target is 60 s, not the budget
    assert "target < 60 s: met" in gpu_model.study_verdict(row)
    base = tmp_path / "base.json"
    base.write_text(json.dumps([row]))
    assert gpu_model.check([dict(row, kernels_per_step=101.9)], str(base)) == 0
    assert gpu_model.check([dict(row, kernels_per_step=103.0)], str(base)) == 1
    assert gpu_model.check([dict(row, syncs_per_step=2.06)], str(base)) == 1
    assert "REGRESSION" in capsys.readouterr().out
