"""Helpers shared by the K-armed tests: runs that must all stop, the two-sided z of two means, and
the independent NumPy implementations of ``benchmarks/karmed_reference.py`` (``ref``)."""
from __future__ import annotations

import importlib.util
import math
import pathlib

import numpy as np

from jaxbandits.engine import simulate


def stopped_samples(alg, inst, n, key=0, max_steps: int = 200_000):
    """(samples [n] as floats, error count) of ``n`` replications, every one of which must stop."""
    res = simulate(alg, inst, key, n_reps=n, max_steps=max_steps)
    assert bool(np.asarray(res.stopped).all())
    return np.asarray(res.samples, float).ravel(), int(np.sum(~np.asarray(res.correct).ravel()))


def two_sample_z(a, b) -> float:
    """(mean a - mean b) / its standard error, the two samples independent."""
    return (a.mean() - b.mean()) / math.hypot(a.std(ddof=1) / math.sqrt(a.size), b.std(ddof=1) / math.sqrt(b.size))


def _load_reference():
    spec = importlib.util.spec_from_file_location(
        "karmed_reference", pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "karmed_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: ``benchmarks/karmed_reference.py``, loaded once
ref = _load_reference()
