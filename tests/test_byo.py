"""Bring your own algorithm: an algorithm written outside the package goes through
:func:`jaxbandits.calibrate` and :func:`jaxbandits.benchmark`; mutated copies fail the calibration;
stored baselines are read back, not recomputed; the ``jaxbandits`` command dispatches.

The tutorial's algorithm (docs/examples/gopt_tracking.py, walked through in
docs/adding_an_algorithm.md) is loaded from its file, as the command line does, so the tutorial
cannot drift from the library.  Every key is fixed: each assertion is about one fixed set of runs.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import benchmarking as bm
from jaxbandits import byo
from jaxbandits.algorithms import FWS, common
from jaxbandits.engine import programs_compiled

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = f"{ROOT / 'docs' / 'examples' / 'gopt_tracking.py'}:GOptTracking"
GOptTracking = byo.load_object(TUTORIAL)


# -- algorithms defined here, outside the package ---------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GOptSigmaIgnored(GOptTracking):
    """The tutorial's algorithm with the noise scale ignored: threshold log((1 + log t) / delta)
    in reward units whatever sigma is."""

    def threshold(self, t, sigma):
        return super().threshold(t, jnp.ones_like(sigma))


@dataclasses.dataclass(frozen=True)
class FWSThirdThreshold(FWS):
    """A copy of Frank-Wolfe Sampling whose stopping threshold is three times too small at every
    noise level: FWS uses sigma only in its threshold sigma^2 beta(t, delta), so running it with
    sigma / sqrt(3) divides the threshold by 3 and changes nothing else."""

    def step_masked(self, key, state, instance, active):
        sigma = common.noise_scale(self.sigma, instance) / math.sqrt(3.0)
        return FWS.step_masked(dataclasses.replace(self, sigma=sigma), key, state, instance, active)


# -- calibrate --------------------------------------------------------------------------------------
def test_tutorial_algorithm_passes_calibration(tmp_path):
    df = jb.calibrate(GOptTracking(), n_reps=20, out=tmp_path, progress=False)
    assert len(df) == 6 and set(df["sigma"]) == {0.5, 1.0, 3.0} and set(df["delta"]) == {0.05, 0.2}
    assert (df["verdict"] == "pass").all(), df[["sigma", "delta", "verdict"]]
    assert df.attrs["verdict"] == "pass" and byo.verdict(df) == "pass"
    assert np.all(df["ratio_LB"].astype(float) > 1.0)
    # stored under the algorithm's code version, and read back: nothing is compiled again
    folder = tmp_path / f"GOptTracking_{byo.code_version(GOptTracking())}"
    assert (folder / "calibration.md").exists() and (folder / "rows.csv").exists()
    n = programs_compiled()
    again = jb.calibrate(GOptTracking(), n_reps=20, out=tmp_path, progress=False)
    assert programs_compiled() == n
    np.testing.assert_array_equal(again["mean"].to_numpy(), df["mean"].to_numpy())


def test_sigma_ignored_copy_fails_scaling():
    df = jb.calibrate(GOptSigmaIgnored(), n_reps=20, progress=False)
    assert df.attrs["verdict"].startswith("FAIL")
    bad = df[df["sigma"] != 1.0]
    assert all("scaling" in v for v in bad["verdict"]), bad[["sigma", "delta", "verdict"]]
    # noise 3 with unit widths: stops far earlier than the unit-noise run
    assert (df.loc[df["sigma"] == 3.0, "ratio_to_unit"].astype(float) < 0.5).all()


def test_library_copy_with_third_threshold_fails_lower_bound():
    df = jb.calibrate(FWSThirdThreshold(), n_reps=40, progress=False, name="FWS, threshold / 3")
    assert df.attrs["verdict"].startswith("FAIL")
    row = df[df["delta"] == 0.05]
    assert all("below lower bound" in v for v in row["verdict"]), row[["sigma", "verdict"]]
    # the mean stopping time sits far below the lower bound: about 0.39 of it at 200 replications
    # per noise level (measured), with a standard error of about 0.1 at the 40 run here; 0.75 is
    # more than 3 standard errors above, and the unmutated FWS sits above 1
    assert (row["ratio_LB"].astype(float) < 0.75).all(), row[["sigma", "mean", "se", "ratio_LB"]]


def test_calibrate_refuses_what_it_cannot_check():
    from jaxbandits.algorithms import GSE

    with pytest.raises(ValueError, match="fixed-budget"):
        jb.calibrate(GSE(budget=100), n_reps=2, progress=False)
    with pytest.raises(ValueError, match="size"):
        jb.calibrate(GOptTracking(), size="huge")


# -- benchmark --------------------------------------------------------------------------------------
def _tiny_suite():
    """The fixed-confidence suite cut down to Soare's instance at d = 2 and one baseline."""
    s = bm.SUITES["fixed-confidence"]
    return dataclasses.replace(s, name="tiny-test", sets=(dataclasses.replace(s.sets[0], quick_grid={"d": [2]},
                                                                              n_reps=(4, 4)),),
                               quick_baselines=("UniformGLR",))


def test_benchmark_reads_baselines_back(tmp_path, monkeypatch):
    suite = _tiny_suite()
    rep = jb.benchmark({"mine": GOptTracking()}, suite, out=tmp_path, progress=False)
    t = rep.table
    assert set(t["algorithm"]) == {"mine", "UniformGLR"} and set(t["kind"]) == {"yours", "baseline"}
    assert set(t["set"]) == {"soare"} and (t["runs"] == 4).all()
    assert (t["frac_capped"] == 0).all() and (t["errors"] == 0).all()
    assert np.all(np.isfinite(t["ratio"])) and np.all(t["ratio"] > 1.0) and np.all(t["ratio_se"] > 0)
    assert np.all(t["error_hi"] > 0) and np.all(t["error_lo"] == 0)
    # tracking a design beats round robin on Soare's instance (same instance, same keys)
    s = rep.summary.set_index("algorithm")
    assert s.loc["mine", "ratio"] < s.loc["UniformGLR", "ratio"]
    # the report, the figures and the versions
    md = rep.markdown
    assert "suite tiny-test v2" in md and "**mine**" in md and "UniformGLR" in md
    assert {p.name for p in rep.figures} == {"soare.png", "ratio_distribution.png"}
    assert rep.metadata["suite_version"] == "2" and rep.metadata["jaxbandits"].startswith(jb.__version__)
    assert rep.metadata["algorithms"]["mine"]["code_version"] == byo.code_version(GOptTracking())
    base_dir = Path(rep.metadata["algorithms"]["UniformGLR"]["folder"])
    assert base_dir.is_relative_to(tmp_path / "baselines") and (base_dir / "soare" / "rows.csv").exists()

    # a rerun compiles nothing: every run, the baseline's included, is read back from disk
    n = programs_compiled()
    again = jb.benchmark({"mine": GOptTracking()}, suite, out=tmp_path, progress=False)
    assert programs_compiled() == n
    np.testing.assert_array_equal(again.table["mean"].to_numpy(), t["mean"].to_numpy())
    # ... and keeps the seconds its runs took when they were computed, and says what it read back
    assert rep.metadata["replications_computed"] == 8 and rep.metadata["replications_read_back"] == 0
    assert again.metadata["replications_read_back"] == 8 and again.metadata["replications_computed"] == 0
    for name in ("mine", "UniformGLR"):
        assert rep.metadata["seconds"][name] > 0
        assert again.metadata["seconds"][name] == pytest.approx(rep.metadata["seconds"][name])
    assert "read back 8 of 8 replications" in again.markdown
    assert f"| mine | yours | {again.metadata['algorithms']['mine']['code_version']} | 0 |" not in again.markdown

    # another algorithm of yours: only yours is simulated, the stored baseline is read back
    import jaxbandits.engine as engine

    ran, simulate = [], engine.simulate
    monkeypatch.setattr(engine, "simulate", lambda alg, *a, **k: ran.append(type(alg).__name__) or simulate(alg, *a, **k))
    other = jb.benchmark({"sigma ignored": GOptSigmaIgnored()}, suite, out=tmp_path, progress=False)
    assert ran == ["GOptSigmaIgnored"]
    b0, b1 = (x[x["algorithm"] == "UniformGLR"].reset_index(drop=True) for x in (t, other.table))
    np.testing.assert_array_equal(b0["mean"].to_numpy(), b1["mean"].to_numpy())


def test_benchmark_refuses_name_clash_and_wrong_m(tmp_path):
    with pytest.raises(ValueError, match="clash"):
        jb.benchmark({"UniformGLR": GOptTracking()}, _tiny_suite(), out=tmp_path, progress=False)
    with pytest.raises(ValueError, match="m = 2"):
        jb.benchmark({"mine": GOptTracking()}, "top-m", out=tmp_path, progress=False, baselines=False)


def test_suites_are_versioned_and_complete():
    for name, kind in (("fixed-confidence", "fixed-confidence"), ("top-m", "top-m"), ("fixed-budget", "fixed-budget")):
        s = bm.SUITES[name]
        assert s.kind == kind and s.version
        assert set(s.quick_baselines) <= set(s.baselines)
        for iset in s.sets:
            assert iset.points("quick") and iset.points("full")
    fc = {i.name for i in bm.SUITES["fixed-confidence"].sets}
    assert fc == {"soare", "many-arms", "sphere", "transductive"}
    assert bm.SUITES["fixed-confidence"].sets[0].points("full") == [{"d": d} for d in range(2, 11)]


# -- loading and the command line -------------------------------------------------------------------
def test_load_algorithm_from_file():
    alg = byo.load_algorithm(TUTORIAL, delta=0.1)
    assert type(alg).__name__ == "GOptTracking" and alg.delta == 0.1
    assert byo.load_object(TUTORIAL) is GOptTracking  # one module per file, not reloaded
    with pytest.raises(byo.LoadError, match="defines no 'Nope'; the algorithms it defines: GOptTracking"):
        byo.load_object(f"{ROOT / 'docs' / 'examples' / 'gopt_tracking.py'}:Nope")


def test_code_version_follows_the_users_file(tmp_path):
    src = (ROOT / "docs" / "examples" / "gopt_tracking.py").read_text()
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "b.py").write_text(src.replace("(1.0 + jnp.log(t))", "(2.0 + jnp.log(t))"))
    va = byo.code_version(byo.load_algorithm(f"{tmp_path / 'a.py'}:GOptTracking"))
    vb = byo.code_version(byo.load_algorithm(f"{tmp_path / 'b.py'}:GOptTracking"))
    assert va != vb
    assert va == byo.code_version(byo.load_algorithm(f"{tmp_path / 'a.py'}:GOptTracking"))
    # wrapped in a library algorithm, the user's file still counts
    from jaxbandits.algorithms import BudgetCapped
    wa, wb = (byo.code_version(BudgetCapped(byo.load_algorithm(f"{tmp_path / n}:GOptTracking"), 100))
              for n in ("a.py", "b.py"))
    assert wa != wb


def test_cli_dispatch(tmp_path, capsys):
    from jaxbandits import cli

    assert cli.main(["suites"]) == 0
    assert "fixed-confidence v2" in capsys.readouterr().out
    # anything that is not a subcommand goes to the experiments' entry point
    assert cli.main([]) == 0
    assert "seed000_table1" in capsys.readouterr().out
    rc = cli.main(["calibrate", f"mine={TUTORIAL}", "--reps", "10", "--out", str(tmp_path), "--no-progress",
                   "--no-compile-cache"])
    out = capsys.readouterr().out
    assert rc == 0 and "Overall: pass" in out
    assert any(p.name.startswith("mine_") for p in tmp_path.iterdir())
    # a rerun reads every run back and says so, with the seconds they took when computed
    assert cli.main(["calibrate", f"mine={TUTORIAL}", "--reps", "10", "--out", str(tmp_path), "--no-progress",
                     "--no-compile-cache"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "60 of 60 runs read back from" in last and "rows.csv" in last and "s when computed" in last


@pytest.mark.parametrize("example", ["gopt_tracking.py", "compose_rules.py"])
def test_tutorial_excerpts_are_the_file(example):
    """Every code block of docs/adding_an_algorithm.md headed ``# docs/examples/<example>`` is a
    verbatim excerpt of that file."""
    import re

    doc = (ROOT / "docs" / "adding_an_algorithm.md").read_text()
    src = (ROOT / "docs" / "examples" / example).read_text()
    blocks = re.findall(rf"```python\n# docs/examples/{re.escape(example)}\n(.*?)```", doc, re.S)
    assert len(blocks) >= 3
    for b in blocks:
        assert b in src, b[:200]
