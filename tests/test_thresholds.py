"""The stopping thresholds of :mod:`jaxbandits.rules.thresholds`: each rule against its formula
(written out in NumPy here), the names every algorithm accepts resolve to one rule each, and no
algorithm module writes a threshold's formula itself."""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxbandits.rules import thresholds as th

ROOT = Path(__file__).resolve().parent.parent
POINTS = [(1.0, 0.1, 1.0), (7.0, 0.01, 0.5), (1000.0, 1e-4, 2.0)]  # (t, delta, sigma)


def _gram(t):
    a = np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.5], [0.3, 0.0, 1.0]])
    return t * a @ a.T / 3.0


@pytest.mark.parametrize("t,delta,sigma", POINTS)
def test_each_rule_equals_its_formula(t, delta, sigma):
    close = dict(rtol=1e-12)
    np.testing.assert_allclose(th.log_t(t, delta), np.log((t + 1) / delta), **close)
    np.testing.assert_allclose(th.log_log_t(t, delta), np.log((1 + np.log(t)) / delta), **close)
    np.testing.assert_allclose(th.lucb1(t, delta, 5), np.log(5 * 5 * t**4 / (4 * delta)), **close)
    np.testing.assert_allclose(th.log_t2(t, delta), np.log(t**2 / delta), **close)
    A, d = _gram(t), 3
    for u, c in ((1.0, 2.0), (0.1, 0.7)):
        want = (1 + u) * sigma**2 * np.log(np.sqrt(np.linalg.det(A / (u * c) + np.eye(d))) / delta)
        np.testing.assert_allclose(th.prop2(jnp.asarray(A), delta, sigma, c, u), want, **close)
        np.testing.assert_allclose(th.prop2_small(jnp.asarray(A), delta, sigma, c, u), want, **close)
        np.testing.assert_allclose((1 + u) * sigma**2 * th.prop2_log(jnp.asarray(A), delta, u * c), want, **close)
        A2 = A[:2, :2]  # the closed form of d = 2
        want2 = (1 + u) * sigma**2 * np.log(np.sqrt(np.linalg.det(A2 / (u * c) + np.eye(2))) / delta)
        np.testing.assert_allclose(th.prop2_small(jnp.asarray(A2), delta, sigma, c, u), want2, **close)
    dt = 6 * delta / (math.pi**2 * t**2)
    np.testing.assert_allclose(th.anytime_delta(delta, jnp.asarray(t)), dt, **close)
    reg, S = 0.25, 1.5
    ay = (np.sqrt(np.log(1 / delta) + 0.5 * np.log(np.linalg.det(A / reg + np.eye(d)))) + np.sqrt(reg / 2) * S / sigma) ** 2
    np.testing.assert_allclose(th.abbasi_yadkori(jnp.asarray(A), delta, reg, S, sigma), ay, **close)
    # the width form of the same bound: sqrt(2 beta) with its tail sqrt(lambda) S / sigma
    logdet = np.log(np.linalg.det(A / reg + np.eye(d)))
    np.testing.assert_allclose(th.abbasi_yadkori_width(logdet, delta, np.sqrt(reg) * S / sigma), np.sqrt(2 * ay), **close)
    L2, N, tail = 1.3, 3, 0.2
    eq2 = np.sqrt(2 * np.log(1 / delta) + N * np.log(1 + (t + 1) * L2 / (reg**2 * N))) + tail
    np.testing.assert_allclose(th.reda_eq2_width(t, delta, N, L2, reg, tail), eq2, **close)
    np.testing.assert_allclose(th.width(th.log_t(t, delta)), np.sqrt(2 * np.log((t + 1) / delta)), **close)


def test_the_registry_names_one_rule_per_formula_and_every_alias_resolves():
    assert len({r.formula for r in th.RULES.values()}) == len(th.RULES)
    for family, table in th.ALIASES.items():
        assert th.names(family) == tuple(table)
        for alias, rule in table.items():
            assert th.resolve(family, alias) == rule and rule in th.RULES
    # every rule is some algorithm's
    assert set(th.RULES) == {r for table in th.ALIASES.values() for r in table.values()}
    # "lts" (FWS, Top Two, Fixed Weights) and "prop2" (LT&S) are the same rule; "theoretical" is
    # a different rule in LinGame and in GIFA
    assert th.resolve("glr", "lts") == th.resolve("track_and_stop", "prop2") == "prop2"
    assert th.resolve("lingame", "theoretical") == "abbasi_yadkori" == th.resolve("gifa", "determinant")
    assert th.resolve("gifa", "theoretical") == "reda_eq2"
    for family in ("glr", "lingame", "gifa"):
        assert th.resolve(family, "heuristic") == "log_log_t"
    with pytest.raises(ValueError, match=r"threshold must be one of \('prop2', 'log_t'\), got 'lts'"):
        th.resolve("track_and_stop", "lts")
    with pytest.raises(ValueError, match="threshold must be one of"):
        th.resolve("glr", ["log_t"])


def test_the_algorithms_accept_their_names_and_compute_through_the_rules():
    from jaxbandits.algorithms import GIFA, FWS, LazyTrackAndStop, LinGame, TopTwo, glr
    from jaxbandits.algorithms.fixed_confidence import lingame, track_and_stop
    from jaxbandits.algorithms.top_m import gifa

    assert track_and_stop.THRESHOLDS == ("prop2", "log_t")
    assert lingame.THRESHOLDS == ("heuristic", "theoretical", "log_t")
    assert gifa.THRESHOLDS == ("theoretical", "heuristic", "lucb1", "determinant", "td_lingape", "log_t")
    assert glr.THRESHOLDS == ("heuristic", "lts", "log_t")
    for name in track_and_stop.THRESHOLDS:
        LazyTrackAndStop(threshold=name)
    for name in lingame.THRESHOLDS:
        LinGame(threshold=name)
    for name in gifa.THRESHOLDS:
        GIFA(threshold=name)
    for name in glr.THRESHOLDS:
        FWS(threshold=name), TopTwo(threshold=name)
    for cls in (LazyTrackAndStop, LinGame, GIFA, FWS):
        with pytest.raises(ValueError, match="threshold must be one of .*got 'log t'"):
            cls(threshold="log t")
    A, t, delta, sigma, c = jnp.asarray(_gram(50.0)), jnp.asarray(50.0), 0.05, 0.5, 2.0
    assert glr.stopping_threshold("log_t", A, t, delta, sigma, c) == sigma**2 * th.log_t(t, delta)
    assert glr.stopping_threshold("heuristic", A, t, delta, sigma, c) == sigma**2 * th.log_log_t(t, delta)
    assert glr.stopping_threshold("lts", A, t, delta, sigma, c) == th.prop2(A, th.anytime_delta(delta, t), sigma, c, 1.0)


# the formulas of the rules, as an algorithm module would write them inline
INLINE = {
    "log((t + 1) / delta)": re.compile(r"jnp\.log\(\(\s*(?!jnp\.log)[\w.()]+\s*\+\s*[12]\.0\s*\)\s*/"),
    "log((1 + log t) / delta)": re.compile(r"jnp\.log\(\(\s*(1\.0\s*\+\s*jnp\.log\(|jnp\.log\([^)]*\)\s*\+\s*1\.0)"),
    "Prop 2 / eq. (9)": re.compile(r"\(1\.0 \+ u\) \* sigma\*\*2"),
    "log(5 K t^4 / (4 delta))": re.compile(r"5\.0 \* K \* t\*\*4"),
    "log det(A / lambda + I)": re.compile(r"slogdet\(gram / "),
    "log(det(A / c + I)^(1/2) / delta)": re.compile(r"0\.5 \* [\w.]*log_det_ratio\("),
}


def test_no_algorithm_module_writes_a_threshold_formula_itself():
    found = [f"{p.relative_to(ROOT)}:{i}: {name}"
             for p in sorted((ROOT / "jaxbandits" / "algorithms").rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             for name, pattern in INLINE.items() if pattern.search(line.split("#")[0])]
    assert found == []
    # the patterns do find the formulas where they are written
    text = (ROOT / "jaxbandits" / "rules" / "thresholds.py").read_text()
    assert all(p.search(text) for p in INLINE.values())
    assert INLINE["log((t + 1) / delta)"].search("beta = jnp.log((tn + 1.0) / self.delta)")
    assert INLINE["log((t + 1) / delta)"].search("jnp.sqrt(2.0 * jnp.log((state.t + 2.0) / delta))")
    assert INLINE["log((1 + log t) / delta)"].search("jnp.log((jnp.log(tf) + 1.0) / self.delta)")
    assert INLINE["log(det(A / c + I)^(1/2) / delta)"].search("zeta = 0.5 * common.log_det_ratio(stats.gram, c) - x")


def test_the_thresholds_import_nothing_from_the_library():
    tree = ast.parse((ROOT / "jaxbandits" / "rules" / "thresholds.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "math", "typing", "jax", "jax.numpy", "jax.scipy.special"}, imported
