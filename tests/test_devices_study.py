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
    kernels per step rise by more than 2 % (or whose syncs or bytes per lane rise) fails; a row at
    other lanes than its baseline's is not compared."""
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
    # a row at other lanes is not compared (XLA fuses differently by size): no verdict either way
    assert gpu_model.check([dict(row, kernels_per_step=200.0, lanes=16_384)], str(base)) == 0
    assert "not compared" in capsys.readouterr().out


def test_workloads_build_only_the_instance_a_row_asks_for():
    """On an accelerator every eager operation of an instance generator compiles a kernel: a row's
    process builds its own instance only, once, however many workloads share it."""
    ws = devices.workloads(quick=True)
    assert all(isinstance(w.source, devices.Lazy) and w.source._value is None for w in ws)
    (sphere,) = [w for w in ws if w.name.startswith("SphereBAI")]
    inst = sphere.instance
    assert sphere.instance is inst and inst.arms.shape[-1] == 3
    rage, xy = (next(w for w in ws if w.name.startswith(n)) for n in ("RAGE", "XY-static"))
    assert rage.source is xy.source and rage.source._value is None   # Soare's instance not built yet
    assert rage.instance is xy.instance


def test_a_row_stopped_before_its_first_chunk_says_where_its_time_went(tmp_path):
    base = dict(name="GSE, static d=16 B=320", platform="gpu", lanes_asked=None, kind="study")
    path = str(tmp_path / "row.json")
    devices._ended_early(path, base, "timed out after 55 s")   # no file: stopped before the row began
    assert "before its row began" in json.load(open(path))["error"]
    json.dump(dict(base, phase="compile and first wave", lanes_first_wave=262_144, start_s=7.25, compiled_s=3.5),
              open(path, "w"))
    devices._ended_early(path, base, "timed out after 55 s")
    err = json.load(open(path))["error"]
    assert err == ("timed out after 55 s: 7.2 s to start the process, then compiling (3.5 s of compiles ended) "
                   "and the first wave of 262,144 lanes")
    done = dict(base, reps=262_144, reps_per_s=1.0)                # whole chunks measured: kept as they are
    json.dump(done, open(path, "w"))
    devices._ended_early(path, base, "timed out after 55 s")
    assert json.load(open(path)) == done
    json.dump(dict(base, phase="compile and first wave", lanes_first_wave=8, start_s=1.0), open(path, "w"))
    devices._ended_early(path, base, "the process ended (exit code -9)")
    assert json.load(open(path))["error"].startswith("the process ended (exit code -9): 1.0 s to start")


def test_a_study_row_cut_in_its_first_wave_reports_its_compile(tmp_path):
    """A row whose process is stopped during its first wave: the parent's error names the process's
    start and the compile seconds that had ended (XLA's compile events, written as they end)."""
    import time

    out = tmp_path / "study"
    os.makedirs(out)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    row = dict(name="XY-adaptive, Soare d=5", platform="cpu", lanes_asked=None, kind="study")
    path = devices._study_path(str(out), row["name"], "cpu")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "benchmarks", "devices.py"), "study-row", row["name"],
                             "--quick", "--platform", "cpu", "--reps", "4096", "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # XY-adaptive's first wave runs thousands of steps: stop the process once its program compiled
        t0 = time.time()
        while time.time() - t0 < 100:
            if os.path.exists(path) and json.load(open(path)).get("compiled_s", 0) > 1.0:  # the program
                break
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    devices._ended_early(path, row, "timed out after 1 s")
    err = json.load(open(path))["error"]
    assert err.startswith("timed out after 1 s: ") and "s to start the process" in err
    assert float(err.split("compiling (")[1].split(" s")[0]) > 1.0


def test_gpu_model_counts_solver_calls_and_charges_them():
    """A cuSOLVER or triangular-solve custom call is counted as a solver call (a matrix product is
    not), with the entries of its matrices (a batch of 4 3 x 3: 36), and the predicted rate charges
    each T_SOLVER an entry (lanes x d^2 for a call batched over the lanes, d^2 for one on a shared
    matrix; rows without the entries: lanes x d^2 a call)."""
    import gpu_model

    text = "\n".join([
        "HloModule m",
        "ENTRY %main (p: f64[4,3,3]) -> f64[4,3,3] {",
        "  %p = f64[4,3,3]{2,1,0} parameter(0)",
        '  %c = (f64[4,3,3]{2,1,0}, f64[4,3]{1,0}, s32[4]{0}) custom-call(%p), custom_call_target="cusolver_syevd_ffi"',
        "  %g = f64[4,3,3]{2,1,0} get-tuple-element(%c), index=0",
        '  %t = f64[4,3,3]{2,1,0} custom-call(%g, %g), custom_call_target="__cublas$triangularSolve"',
        '  ROOT %m = f64[4,3,3]{2,1,0} custom-call(%t, %t), custom_call_target="__cublas$gemm"',
        "}"])
    comps, entry = gpu_model.parse_hlo(text)
    c = gpu_model.cost(comps, entry, 1.0)
    assert c.kernels == 3 and c.solver_calls == 2 and c.solver_entries == 2 * 4 * 9
    base = gpu_model.Cost(kernels=10.0, bytes=1e6)
    lanes, steps, d = 262_144, 100.0, 5
    step = lambda cost: lanes * gpu_model.EFFICIENCY / (steps * gpu_model.predict(cost, lanes, steps, d))  # noqa: E731
    t0 = step(base)
    legacy = gpu_model.Cost(kernels=10.0, bytes=1e6, solver_calls=2.0)
    assert abs((step(legacy) - t0) - 2 * lanes * d**2 * gpu_model.T_SOLVER) < 1e-12
    batched = gpu_model.Cost(kernels=10.0, bytes=1e6, solver_calls=2.0, solver_entries=2.0 * lanes * d**2)
    assert abs((step(batched) - t0) - 2 * lanes * d**2 * gpu_model.T_SOLVER) < 1e-12
    shared = gpu_model.Cost(kernels=10.0, bytes=1e6, solver_calls=1.0, solver_entries=float(d**2))
    assert abs((step(shared) - t0) - d**2 * gpu_model.T_SOLVER) < 1e-12


def test_gpu_model_charges_the_fused_kernels_arithmetic():
    """``gpu_model.kernel_ops``: a fused loop's body is charged per element operation, times its
    trips; data movement is free; a lane's own trips (a ``cond`` past them) are charged in full; and
    the charge enters the predicted step time at ``FP64_OPS``."""
    import jax
    import jax.numpy as jnp

    import gpu_model
    from jaxbandits.design.kernels import fused_fori_loop

    body = lambda i, c, k: (c[0] * k + 1.0,)  # noqa: E731  (a multiply and an add on 16 entries)
    loop = lambda x, k, kern, n: fused_fori_loop(n, body, (x,), (k,), kernels=kern, max_trips=10)  # noqa: E731
    x = jnp.zeros(16)
    ops = {kern: gpu_model.kernel_ops(jax.make_jaxpr(lambda x, k: loop(x, k, kern, 10))(x, x).jaxpr)
           for kern in ("xla", "triton")}
    assert ops == {"xla": 0.0, "triton": 10 * 2 * 16}
    dyn = jax.make_jaxpr(lambda x, k, n: loop(x, k, "triton", n))(x, x, jnp.int32(3)).jaxpr
    assert gpu_model.kernel_ops(dyn) >= 10 * 2 * 16
    c = gpu_model.Cost(kernels=0.0)
    t = 1000 / gpu_model.predict(c, 1000, 1.0, fused_ops=gpu_model.FP64_OPS * 1e-3) * gpu_model.EFFICIENCY
    assert abs(t - 1.0) < 1e-9   # 1e-3 s of arithmetic a lane-step, 1000 lanes: 1 s a step


def test_gpu_model_counts_in_place_kernels_by_what_they_move():
    """The model's HBM bytes of a kernel: operands and results, except a scatter's updated operand
    (written in place: only its updated entries move) and a custom call's aliased operands (a
    gated kernel updating the lanes' state in place: moved for the gated fraction of the lanes)."""
    import gpu_model

    text = """HloModule m

%fused_scatter (param_0: f64[100,1000], param_1: s32[100,1], param_2: f64[100]) -> f64[100,1000] {
  %param_0 = f64[100,1000]{1,0} parameter(0)
  %param_1 = s32[100,1]{1,0} parameter(1)
  %param_2 = f64[100]{0} parameter(2)
  ROOT %scatter.1 = f64[100,1000]{1,0} scatter(%param_0, %param_1, %param_2), update_window_dims={}
}

%fused_add (param_0.1: f64[100,1000]) -> f64[100,1000] {
  %param_0.1 = f64[100,1000]{1,0} parameter(0)
  ROOT %add.1 = f64[100,1000]{1,0} add(%param_0.1, %param_0.1)
}

ENTRY %main (a: f64[100,1000], i: s32[100,1], u: f64[100], g: s32[100,1]) -> f64[100,1000] {
  %a = f64[100,1000]{1,0} parameter(0)
  %i = s32[100,1]{1,0} parameter(1)
  %u = f64[100]{0} parameter(2)
  %g = s32[100,1]{1,0} parameter(3)
  %s = f64[100,1000]{1,0} fusion(%a, %i, %u), kind=kInput, calls=%fused_scatter
  %k = (f64[100,1000]{1,0}) custom-call(%s, %g), custom_call_target="__gpu$xla.gpu.triton", output_to_operand_aliasing={{0}: (0, {})}
  %k0 = f64[100,1000]{1,0} get-tuple-element(%k), index=0
  ROOT %f = f64[100,1000]{1,0} fusion(%k0), kind=kLoop, calls=%fused_add
}
"""
    comps, entry = gpu_model.parse_hlo(text)
    full, idx, upd, gate = 100 * 1000 * 8, 100 * 4, 100 * 8, 100 * 4
    by = {i.name: i for i in comps[entry]}
    shapes = {i.name: i.out_bytes for i in comps[entry]}
    assert gpu_model.scattered_operand(comps, by["s"]) == 0
    assert gpu_model.kernel_bytes(comps, by["s"], shapes) == idx + upd
    assert by["k"].aliased == (0,)
    assert gpu_model.kernel_bytes(comps, by["k"], shapes) == gate + 2 * full
    assert gpu_model.kernel_bytes(comps, by["k"], shapes, gated=0.1) == gate + 0.2 * full
    assert gpu_model.kernel_bytes(comps, by["f"], shapes) == 2 * full   # everything else: operands and result
    assert gpu_model.cost(comps, entry, 1.0, gated=0.1).bytes == idx + upd + gate + 0.2 * full + 2 * full
