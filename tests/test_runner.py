"""The experiments runner: CSV per replication, resume from disk, metadata, listing."""
import json

import pytest

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandits as jb
from experiments import _runner
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR


def _inst():
    X = jnp.array([[1.0, 0.0], [0.0, 1.0], [np.cos(0.5), np.sin(0.5)]])
    return jb.make_instance(X, jnp.array([1.0, 0.0]), 1.0)


def test_simulate_writes_csv_and_resumes(tmp_path):
    ctx = _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    label = dict(alg="uniform", K=3)
    full = ctx.simulate(label, UniformGLR(delta=0.1), _inst(), 40, 10**5)
    lines = (tmp_path / "results.csv").read_text().strip().splitlines()
    assert len(lines) == 41  # header + one row per replication

    # an interrupted run: keep the first 15 rows only, then rerun with the same arguments
    (tmp_path / "results.csv").write_text("\n".join(lines[:16]) + "\n")
    ctx2 = _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    again = ctx2.simulate(label, UniformGLR(delta=0.1), _inst(), 40, 10**5)
    assert ctx2.resumed == 15
    np.testing.assert_array_equal(full.samples, again.samples)
    np.testing.assert_array_equal(full.answer, again.answer)
    assert len((tmp_path / "results.csv").read_text().strip().splitlines()) == 41

    # a different seed is a different study: nothing is read back
    ctx3 = _runner.Context("t", None, 8, tmp_path, quick=True, quiet=True)
    other = ctx3.simulate(label, UniformGLR(delta=0.1), _inst(), 40, 10**5)
    assert ctx3.resumed == 0 and not np.array_equal(other.samples, full.samples)


def test_labels_get_independent_keys(tmp_path):
    ctx = _runner.Context("t", None, 0, tmp_path, quick=True, quiet=True)
    k1 = ctx.label_key(dict(a=1))
    k2 = ctx.label_key(dict(a=2))
    assert not np.array_equal(jax.random.key_data(k1), jax.random.key_data(k2))
    np.testing.assert_array_equal(jax.random.key_data(ctx.label_key(dict(a=1))), jax.random.key_data(k1))


def test_table_metadata_and_listing(tmp_path, capsys):
    ctx = _runner.Context("t", None, 0, tmp_path, quick=True, quiet=True)
    ctx.config["K"] = 3
    ctx.table([dict(alg="x", mean=1.5), dict(alg="y", mean=float("nan"))], name="summary")
    assert "| alg | mean |" in (tmp_path / "summary.md").read_text()
    ctx.write_metadata(dict(name="t"), "done")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    for k in ("jax", "jaxbandits", "devices", "seed", "config", "wall_time", "python"):
        assert k in meta
    assert meta["config"] == {"K": 3}
    assert _runner.main([]) == 0
    assert "Experiments" in capsys.readouterr().out
    assert _runner.main(["no-such-experiment"]) == 2


def test_runner_restarts_a_wedged_run_in_a_fresh_process(monkeypatch):
    # a wedged XLA:CPU runtime stays wedged in its process: the runner re-executes the same
    # command (which resumes from results.csv), a bounded number of times
    from experiments import _runner
    from jaxbandits.watchdog import StalledComputation

    calls = []
    monkeypatch.setattr(_runner.os, "execv", lambda exe, args: calls.append(args))
    monkeypatch.setenv("JAXBANDITS_RESTARTS", "0")
    _runner._restart(StalledComputation("wedged"), ["seed000_table1", "--quick"])
    assert calls and calls[0][1:] == ["-m", "experiments", "seed000_table1", "--quick"]
    assert _runner.os.environ["JAXBANDITS_RESTARTS"] == "1"
    monkeypatch.setenv("JAXBANDITS_RESTARTS", str(_runner.MAX_RESTARTS))
    with pytest.raises(StalledComputation):
        _runner._restart(StalledComputation("wedged"), ["x"])


def test_runner_restarts_before_the_process_runs_out_of_memory_mappings(tmp_path, monkeypatch):
    # XLA:CPU keeps ~750 memory mappings per compiled program; near vm.max_map_count the next
    # compile would abort the process, so the context raises first (after >= 1 finished
    # configuration) and a fresh process resumes from results.csv
    if _runner.mapping_usage() is None:
        pytest.skip("no /proc/self/maps")
    monkeypatch.setenv("JAXBANDITS_MAX_MAP_COUNT", "1")
    # a context that may not replace its process (a test, a notebook: main() called as a
    # function) never raises: the caller's process is never exec'd away
    quiet_ctx = _runner.Context("t", None, 3, tmp_path / "in-process", quick=True, quiet=True)
    quiet_ctx.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    quiet_ctx.simulate(dict(alg="uniform", delta=0.2), UniformGLR(delta=0.2), _inst(), 8, 10**5)
    ctx = _runner.Context("t", None, 3, tmp_path, quick=True, quiet=True, restartable=True)
    first = ctx.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    with pytest.raises(_runner.MappingsExhausted):
        ctx.simulate(dict(alg="uniform", delta=0.2), UniformGLR(delta=0.2), _inst(), 8, 10**5)
    # the fresh process: the finished configuration is read back without compiling, then it runs on
    ctx2 = _runner.Context("t", None, 3, tmp_path, quick=True, quiet=True)
    again = ctx2.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    assert ctx2.resumed == 8
    np.testing.assert_array_equal(first.samples, again.samples)
    ctx2.simulate(dict(alg="uniform", delta=0.2), UniformGLR(delta=0.2), _inst(), 8, 10**5)

    calls = []
    monkeypatch.setattr(_runner.os, "execv", lambda exe, args: calls.append(args))
    monkeypatch.setenv("JAXBANDITS_MAPPING_RESTARTS", "0")
    monkeypatch.setenv("JAXBANDITS_RESTARTS", "0")
    monkeypatch.setenv("JAXBANDITS_RUN_STARTED", "0")  # restored (removed) after the test
    _runner._restart(_runner.MappingsExhausted("near the limit"), ["seed001_fig1"], started=123.0)
    assert calls[0][1:] == ["-m", "experiments", "seed001_fig1"]
    assert _runner.os.environ["JAXBANDITS_MAPPING_RESTARTS"] == "1"
    assert _runner.os.environ["JAXBANDITS_RESTARTS"] == "0"  # stalls have their own budget
    assert _runner.os.environ["JAXBANDITS_RUN_STARTED"] == "123.0"


def test_runner_records_programs_compile_seconds_and_peak_mappings(tmp_path):
    if _runner.mapping_usage() is None:
        pytest.skip("no /proc/self/maps")
    ctx = _runner.Context("t", None, 3, tmp_path, quick=True, quiet=True)
    ctx.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    ctx.simulate(dict(alg="uniform", delta=0.2), UniformGLR(delta=0.2), _inst(), 8, 10**5)
    ctx.write_metadata({}, "done")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["peak_memory_mappings"] >= _runner.mapping_usage()[0] - 1000 > 0
    assert meta["engine_programs_compiled"] >= 1 and meta["engine_compile_seconds"] >= 0.0
    assert set(meta["compile_cache"]) == {"requests", "hits"}
