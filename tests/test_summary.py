"""``Results.summary()``: a table when printed, with four significant digits, the same numbers as its
fields, and still a mapping (``summary()["mean"]``) for the code that reads it as one."""
from __future__ import annotations

import copy
import json
import math
import pickle
import re

import numpy as np
import pytest

from jaxbandits.engine import RESULTS, Results
from jaxbandits.stats import Summary, summarize

#: the keys of the summary (every caller reads some of them)
KEYS = {"runs", "stopped", "mean", "std", "se", "q05", "q25", "median", "q75", "q95", "error_rate", "error_lo",
        "error_hi", "frac_capped", "mean_counting_capped", "results", "wall_time", "compile_time", "efficiency",
        "steps_per_second"}


def results(error_defined=True) -> Results:
    rng = np.random.default_rng(0)
    samples = rng.integers(1_000, 200_000, size=(2, 50)).astype(np.int64)
    stopped = np.ones((2, 50), bool)
    stopped[0, :3] = False
    correct = np.ones((2, 50), bool)
    correct[1, :2] = False
    return Results(samples=samples, steps=samples, correct=correct, stopped=stopped,
                   answer=np.zeros((2, 50, 3), bool), pulls=None, ran=np.ones((2, 50), bool), efficiency=0.8731234567,
                   wall_time=12.3456789, compile_time=3.21098765, lane_steps=10**7, useful_steps=8_731_234,
                   devices=1, lanes=32, chunk_size=512, error_defined=error_defined)


def test_summary_prints_a_table_of_its_fields():
    res = results()
    s = res.summary()
    text = str(s)
    assert repr(s) == text
    lines = text.splitlines()
    assert lines[0] == "Summary of 100 replications"
    # one line per field, under the field's name, value then what it is
    by_name = {ln.split()[0]: ln for ln in lines[1:]}
    for k in KEYS - {"q05", "q25", "median", "q75", "q95", "error_lo", "error_hi"}:
        assert k in by_name, (k, text)
    assert lines[1:][[ln.split()[0] for ln in lines[1:]].index("q05")].split()[:5] == [
        "q05", "q25", "median", "q75", "q95"]
    # no long floats: at most four significant digits, whole numbers from 1,000 on, thousands separated
    for number in re.findall(r"\d[\d,]*\.\d+", text):
        digits = number.replace(",", "").replace(".", "").lstrip("0")
        assert len(digits) <= 4, (number, text)
    assert f"{s.mean:,.0f}" in by_name["mean"] and f"{s.se:,.0f}" in by_name["se"]
    assert "12.35 s" in by_name["wall_time"] and "3.211 s" in by_name["compile_time"]
    assert "0.8731" in by_name["efficiency"]
    assert "2 wrong of 97 stopped runs" in by_name["error_rate"]
    assert f"{s.error_lo:.4g}, {s.error_hi:.4g}" in by_name["error_rate"]
    assert "stopped 97, capped 3, non_finite 0, not_converged 0" in by_name["results"]


def test_summary_fields_hold_the_numbers():
    res = results()
    s = res.summary()
    assert isinstance(s, Summary)
    ref = summarize(res.samples, res.correct, res.stopped)
    for k, v in ref.items():
        assert s[k] == getattr(s, k) == v or (isinstance(v, float) and math.isnan(v) and math.isnan(s[k]))
    assert set(s) == KEYS and len(s) == len(KEYS) and "mean" in s and "level" not in s
    assert dict(s) == {k: getattr(s, k) for k in KEYS} and s == dict(s)
    assert json.loads(json.dumps(s))["runs"] == 100  # still a dict where code stored the former one
    assert pickle.loads(pickle.dumps(s)) == s and str(copy.deepcopy(s)) == str(s)
    with pytest.raises(TypeError, match="read-only"):
        s["mean"] = 0.0
    assert s.results == {c.name.lower(): n for c, n in zip(RESULTS, (97, 3, 0, 0))}
    assert s.wall_time == res.wall_time and s.steps_per_second == res.useful_steps / res.wall_time
    assert s.level == 0.95 and res.summary(0.9).level == 0.9


def test_error_rate_na_when_correct_by_construction():
    s = results(error_defined=False).summary()
    assert s["error_rate"] is None and s.error_lo is None
    line = next(ln for ln in str(s).splitlines() if ln.split()[0] == "error_rate")
    assert "n/a" in line and "correct by construction" in line
