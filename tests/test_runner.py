"""The experiments runner: CSV per replication, resume from disk, metadata, listing."""
import json
from pathlib import Path

import pytest

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandits as jb
from experiments import _runner
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR


def _inst(K=3):
    """Arm 0 = e_1 (the best), e_2, then K - 2 arms at angles 0.5, 0.6, ... from e_1."""
    ang = 0.5 + 0.1 * np.arange(K - 2)
    X = jnp.asarray(np.vstack([[1.0, 0.0], [0.0, 1.0], np.stack([np.cos(ang), np.sin(ang)], 1)]))
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


def test_a_change_of_code_or_of_an_old_layout_is_computed_again(tmp_path, monkeypatch):
    from jaxbandits import store

    label = dict(alg="uniform", K=3)
    ctx = _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    first = ctx.simulate(label, UniformGLR(delta=0.1), _inst(), 6, 10**5)
    ctx2 = _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    ctx2.simulate(label, UniformGLR(delta=0.1), _inst(), 6, 10**5)
    assert ctx2.resumed == 6
    # another version of the code the algorithm runs on: nothing is read back, and the same keys
    # give the same replications
    monkeypatch.setattr(store, "code_version", lambda alg: "another version")
    ctx3 = _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    again = ctx3.simulate(label, UniformGLR(delta=0.1), _inst(), 6, 10**5)
    assert ctx3.resumed == 0
    np.testing.assert_array_equal(first.samples, again.samples)
    # a results file in another layout is moved aside, not appended to
    (tmp_path / "results.csv").write_text("label,seed,instance,rep,samples\nx,7,0,0,5\n")
    with pytest.warns(UserWarning, match="stale"):
        _runner.Context("t", None, 7, tmp_path, quick=True, quiet=True)
    assert (tmp_path / "results.stale.csv").exists() and not (tmp_path / "results.csv").exists()


def test_code_version_follows_the_imports_of_the_algorithm():
    from jaxbandits.algorithms.fixed_budget.budget_capped import lingape_budgeted
    from jaxbandits.store import code_version, source_files

    import jaxbandits

    root = Path(jaxbandits.__file__).parent
    files = {p.relative_to(root).as_posix() for p in source_files(UniformGLR())}
    # its own module, the engine, and what they import, followed (batching: through the engine)
    assert {"algorithms/fixed_confidence/uniform.py", "environment.py", "batching.py"} <= files
    assert "engine.py" in files or "engine/__init__.py" in files
    assert not {"sweeps.py", "calibration.py", "algorithms/top_m/gifa.py"} & files
    # a wrapped algorithm's module counts (BudgetCapped wraps LinGapE in ``inner``)
    assert any(p.name == "gifa.py" for p in source_files(lingape_budgeted(50, 0.1)))
    assert code_version(UniformGLR(delta=0.1)) != code_version(UniformGLR(delta=0.2))
    assert code_version(UniformGLR(delta=0.1)) == code_version(UniformGLR(delta=0.1))


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
    out = capsys.readouterr().out
    assert "Experiments" in out and "?" not in out  # every experiment has both of its times
    assert _runner.main(["no-such-experiment"]) == 2


def test_every_experiment_has_a_quick_and_a_full_time():
    found = _runner.discover()
    assert set(_runner.TIMES) == set(found)
    for name, (quick, full, how) in _runner.TIMES.items():
        assert quick and full and quick < full, name
        assert how in ("measured", "estimate", "lower estimate"), name


def test_runner_restarts_a_wedged_run_in_a_fresh_process(monkeypatch):
    # a wedged XLA:CPU runtime stays wedged in its process: the runner re-executes the same
    # command (which resumes from results.csv), a bounded number of times
    from experiments import _runner
    from jaxbandits import watchdog
    from jaxbandits.watchdog import StalledComputation

    calls = []
    monkeypatch.setattr(watchdog.os, "execv", lambda exe, args: calls.append(args))
    monkeypatch.setenv("JAXBANDITS_RESTARTS", "0")
    _runner._restart(StalledComputation("wedged"), ["seed000_table1", "--quick"])
    assert calls and calls[0][1:] == ["-m", "experiments", "seed000_table1", "--quick"]
    assert watchdog.os.environ["JAXBANDITS_RESTARTS"] == "1"
    monkeypatch.setenv("JAXBANDITS_RESTARTS", str(watchdog.MAX_RESTARTS))
    with pytest.raises(StalledComputation):
        _runner._restart(StalledComputation("wedged"), ["x"])


def test_engine_releases_programs_before_the_mapping_limit_instead_of_restarting(tmp_path, monkeypatch):
    # XLA:CPU keeps ~1,000 memory mappings per loaded program and a process may hold
    # vm.max_map_count of them; the engine drops its compiled programs (and JAX's caches) before
    # compiling once the process is past half its limit, so the mappings go back and a long
    # experiment never needs a fresh process
    from jaxbandits import engine, programs

    if programs.mapping_usage() is None:
        pytest.skip("no /proc/self/maps")
    # start from an empty cache: an earlier test in this process may have compiled any of these
    # programs, and a cache hit compiles nothing (nothing to release before)
    programs.release()
    ctx = _runner.Context("t", None, 3, tmp_path, quick=True, quiet=True)
    ctx.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    ctx.simulate(dict(alg="uniform", K=5), UniformGLR(delta=0.1), _inst(K=5), 8, 10**5)
    held = programs.mapping_usage()[0]
    assert len(engine._RUNNERS) >= 2
    releases, compiled = programs.releases(), engine.programs_compiled()
    monkeypatch.setenv("JAXBANDITS_MAX_MAP_COUNT", str(held))  # now past half the "limit"
    first = ctx.simulate(dict(alg="uniform", K=6), UniformGLR(delta=0.1), _inst(K=6), 8, 10**5)
    assert engine.programs_compiled() == compiled + 1
    assert programs.releases() == releases + 1
    assert len(engine._RUNNERS) == 1  # only the program just compiled
    monkeypatch.delenv("JAXBANDITS_MAX_MAP_COUNT")
    # the released programs' mappings went back: fewer are held now than before, although one
    # more program was compiled since
    assert programs.mapping_usage()[0] < held
    # a released program is compiled again when needed, with the same results
    again = _runner.Context("t", None, 3, tmp_path / "again", quick=True, quiet=True).simulate(
        dict(alg="uniform", K=6), UniformGLR(delta=0.1), _inst(K=6), 8, 10**5)
    np.testing.assert_array_equal(first.samples, again.samples)


def test_runner_records_programs_compile_seconds_and_peak_mappings(tmp_path):
    from jaxbandits import programs

    if programs.mapping_usage() is None:
        pytest.skip("no /proc/self/maps")
    from jaxbandits import engine

    programs.release()  # start from an empty cache: an earlier test may have compiled these programs
    compiled, seconds = engine.programs_compiled(), engine.compile_seconds()
    ctx = _runner.Context("t", None, 3, tmp_path, quick=True, quiet=True)
    ctx.simulate(dict(alg="uniform", delta=0.1), UniformGLR(delta=0.1), _inst(), 8, 10**5)
    ctx.simulate(dict(alg="uniform", delta=0.2), UniformGLR(delta=0.2), _inst(), 8, 10**5)
    ctx.write_metadata({}, "done")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["peak_memory_mappings"] >= programs.mapping_usage()[0] - 1000 > 0
    assert meta["programs_released"] == programs.releases()
    # the cache was emptied, so the first configuration compiled; the second (another delta, a
    # traced field) reused its program
    assert meta["engine_programs_compiled"] == engine.programs_compiled() == compiled + 1
    assert meta["engine_compile_seconds"] == pytest.approx(engine.compile_seconds()) and engine.compile_seconds() > seconds
    assert set(meta["compile_cache"]) == {"requests", "hits"}


def test_a_rerun_keeps_the_first_runs_times_and_layout_and_says_what_it_read_back(tmp_path):
    label = dict(alg="uniform", K=4)
    ctx = _runner.Context("t", None, 5, tmp_path, quick=True, quiet=True)
    first = ctx.simulate(label, UniformGLR(delta=0.1), _inst(K=4), 6, 10**5)
    ctx.write_metadata({}, "done")
    assert first.wall_time > 0 and first.layout is not None
    compiled = json.loads((tmp_path / "metadata.json").read_text())["engine_compile_seconds"]

    ctx2 = _runner.Context("t", None, 5, tmp_path, quick=True, quiet=True)
    again = ctx2.simulate(label, UniformGLR(delta=0.1), _inst(K=4), 6, 10**5)
    assert ctx2.resumed == 6 and ctx2.computed == 0
    # the times, steps and layout are those of the run that computed the replications
    assert again.wall_time == pytest.approx(first.wall_time) and again.compile_time == pytest.approx(first.compile_time)
    assert again.layout == first.layout and again.lane_steps == first.lane_steps
    np.testing.assert_array_equal(again.samples, first.samples)
    ctx2.table([dict(alg="uniform", wall_s=again.wall_time + again.compile_time)], name="summary")
    md = (tmp_path / "summary.md").read_text()
    assert "Read back from" in md and "6 of 6 replications" in md and "results.csv" in md
    ctx2.write_metadata({}, "done")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["replications_read_back"] == 6 and meta["replications_computed"] == 0
    lab = json.dumps(label, sort_keys=True)
    assert meta["layouts"][lab]["lanes"] == first.layout.lanes
    assert meta["seconds_read_back"] == pytest.approx(first.wall_time + first.compile_time)
    # the statistics of the run that compiled are kept beside this run's
    assert meta["earlier_runs"][-1]["engine_compile_seconds"] == pytest.approx(compiled)
    assert meta["earlier_runs"][-1]["replications_computed"] == 6


def test_an_interrupted_run_keeps_the_seconds_of_its_saved_chunks(tmp_path):
    from jaxbandits.store import Store

    arrs = dict(samples=np.array([5, 6]), steps=np.array([5, 6]), correct=np.array([True, True]),
                stopped=np.array([True, True]), answer=np.array([[True, False], [True, False]]))
    st = Store(tmp_path / "rows.csv")
    st.recorder("a", 4)(np.array([0, 1]), arrs)  # then the process dies: no record_run
    m = Store(tmp_path / "rows.csv").measured("a")
    assert m["replications"] == 2 and m["interrupted"] == 1 and m["runs"] == 1
    assert m["wall_time"] == pytest.approx(m["seconds"]) and m["compile_time"] == 0
    # the rest computed by a second run, which finishes: both runs count
    st2 = Store(tmp_path / "rows.csv")
    rec = st2.recorder("a", 4)
    rec(np.array([2, 3]), arrs)

    class R:
        wall_time, compile_time, lane_steps, useful_steps, devices, lanes, chunk_size, layout = 2.0, 3.0, 8, 6, 1, 4, 4, None
    st2.record_run("a", R())
    m = Store(tmp_path / "rows.csv").measured("a")
    assert m["replications"] == 4 and m["runs"] == 2 and m["interrupted"] == 1
    assert m["compile_time"] == 3.0 and m["wall_time"] > 2.0 and m["efficiency"] == 0.75
    # rows that are gone take their measurements with them
    (tmp_path / "rows.csv").unlink()
    assert Store(tmp_path / "rows.csv").measured("a") is None


def test_a_resumed_sweep_says_what_it_read_back_and_ctrl_c_names_its_rows(tmp_path, monkeypatch, capsys):
    import experiments.seed002_static as mod

    gen = jb.Generator("fixed", lambda key, K: _inst(K), {"K": [3]})
    ctx = _runner.Context("t", None, 0, tmp_path, quick=True, quiet=True)
    first = ctx.sweep({"U": UniformGLR()}, gen, n_reps=3, progress=False, lower_bound=False, buckets=None)
    assert ctx.computed == 3 and ctx.resumed == 0 and first.attrs["seconds"] > 0
    ctx2 = _runner.Context("t", None, 0, tmp_path, quick=True, quiet=True)
    again = ctx2.sweep({"U": UniformGLR()}, gen, n_reps=3, progress=False, lower_bound=False, buckets=None)
    assert ctx2.resumed == 3 and ctx2.computed == 0
    assert again.attrs["seconds_read_back"] == pytest.approx(first.attrs["seconds"])
    ctx2.write_metadata({}, "done")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["replications_read_back"] == 3 and meta["rows_files"] == [str(tmp_path / "sweep" / "rows.csv")]
    assert len(meta["layouts"]) == 1

    def run(ctx):
        ctx.sweep({"U": UniformGLR()}, gen, n_reps=3, progress=False, lower_bound=False, buckets=None)
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "run", run)
    capsys.readouterr()
    assert _runner.main(["seed002_static", "--out", str(tmp_path), "--quiet"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("rerun the same command to resume from there")
    assert f"3 replication(s) saved in {tmp_path / 'sweep' / 'rows.csv'}" in err[-1] and "results.csv" not in err[-1]
