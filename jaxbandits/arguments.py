"""Argument checks that every layer may use: scalars (:func:`as_int`, :func:`as_count`,
:func:`as_real`) and the hyperparameters of an algorithm or a rule (:func:`check_fields`), each
error naming the argument, its value and what is allowed.  Imports nothing from the library, so
the algorithm contract's ``validate`` and :mod:`jaxbandits.validation` (the entry points' checks)
share one implementation.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

import numpy as np


def show(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def is_tracer(value) -> bool:
    import jax

    return isinstance(value, jax.core.Tracer)


#: the largest count the compiled programs hold: steps, task ids, budgets, pull and sample counts
#: of the algorithms' states are 32-bit integers (2**31 - 1 = 2147483647)
INT32_MAX = 2**31 - 1


def limit(maximum: int) -> str:
    return "2**31 - 1 = 2147483647" if maximum == INT32_MAX else str(maximum)


def as_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
           allow_none: bool = False, why: str = "") -> int | None:
    """``value`` as a Python int (an int, a NumPy integer or a 0-d integer array; never a bool, a
    float or a string), at least ``minimum`` and at most ``maximum`` (``why``: the reason for the
    maximum, shown with it)."""
    if value is None and allow_none:
        return None
    if maximum is not None:
        allowed = f"an integer in [{minimum}, {limit(maximum)}]" if minimum is not None else \
            f"an integer <= {limit(maximum)}"
    else:
        allowed = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    allowed += " or None" if allow_none else ""
    v = value
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be {allowed}, got {show(value)} ({type(value).__name__})")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be {allowed}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be {allowed}{' (' + why + ')' if why else ''}, got {v}")
    return v


#: why counts stop at :data:`INT32_MAX`
INT32_WHY = "the compiled programs count in 32-bit integers"


def as_count(name: str, value: Any, *, minimum: int | None = 1, allow_none: bool = False,
             why: str = INT32_WHY) -> int | None:
    """:func:`as_int` with the maximum :data:`INT32_MAX`: a count, size or index that the compiled
    programs hold in a 32-bit integer."""
    return as_int(name, value, minimum=minimum, maximum=INT32_MAX, allow_none=allow_none, why=why)


def as_real(name: str, value: Any, *, low: float | None = None, high: float | None = None,
            low_open: bool = True, high_open: bool = True, allow_none: bool = False) -> float | None:
    """``value`` as a finite float (an int, a float, a NumPy scalar or a 0-d array; never a bool or
    a string) inside the interval given by ``low`` / ``high`` (open ends by default)."""
    if value is None and allow_none:
        return None
    if low is not None and high is not None:
        rng = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        rng = f"{'>' if low_open else '>='} {low:g}"
    elif high is not None:
        rng = f"{'<' if high_open else '<='} {high:g}"
    else:
        rng = "finite"
    allowed = f"a number {rng}" + (" or None" if allow_none else "")
    if is_tracer(value):  # a traced value inside a user's jit: checked when concrete
        return value
    v = value
    if hasattr(v, "shape") and hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0:
        v = np.asarray(v).item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be {allowed}, got {show(value)} ({type(value).__name__})")
    try:
        v = float(v)
    except OverflowError:  # an int beyond float64's range
        raise ValueError(f"{name} must be {allowed}, got {show(value)}") from None
    bad = not math.isfinite(v)
    if low is not None:
        bad |= v <= low if low_open else v < low
    if high is not None:
        bad |= v >= high if high_open else v > high
    if bad:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


#: why a budget stops at :data:`INT32_MAX`
BUDGET_WHY = "a budget is a number of pulls, and pull and sample counts are 32-bit integers"

#: the contract's conventional fields (docs/adding_an_algorithm.md): an algorithm of yours that has
#: them without declaring their ranges (:func:`~jaxbandits.algorithms.base.hyperparameter`) gets these;
#: every field of the library's algorithms and rules declares its own
CONVENTIONS: dict[str, dict] = {
    "delta": dict(range=dict(low=0.0, high=1.0)),
    "sigma": dict(range=dict(low=0.0)),
    "epsilon": dict(range=dict(low=0.0, low_open=False)),
    "budget": dict(range=dict(low=0.0), pulls=True),
    "m": dict(count=1),
}


def _is_algorithm(value) -> bool:
    return all(hasattr(value, m) for m in ("init", "step", "done", "outcome", "split_dynamic"))


def check_fields(obj, name: str = "algorithm", *, nested: bool = False) -> None:
    """The hyperparameters of an algorithm or of a rule: each field against the range declared
    beside it (:func:`~jaxbandits.algorithms.base.hyperparameter`), else the contract's
    :data:`CONVENTIONS`, else a number for a dynamic field; every integer at most
    :data:`INT32_MAX`.  The rules of a composition are checked with it (labels such as
    ``Composition.sampling.then.allocation.beta``); an algorithm held in a field (a wrapper's) only
    with ``nested`` (its own ``validate`` checks it otherwise).  ``name`` "algorithm" labels a field
    ``Class.field``, any other name ``name.field``."""
    cls = type(obj).__name__
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        label = f"{cls}.{f.name}" if name == "algorithm" else f"{name}.{f.name}"
        if dataclasses.is_dataclass(v) and hasattr(v, "split_dynamic"):  # a rule, or a wrapped algorithm
            if not _is_algorithm(v):
                check_fields(v, label, nested=nested)
            elif nested:
                check_fields(v, f"{cls}.{f.name}", nested=True)
            continue
        if v is None or is_tracer(v):
            continue
        declared = f.metadata or CONVENTIONS.get(f.name, {})
        if "count" in declared:
            as_count(label, v, minimum=declared["count"])
        elif "range" in declared:
            as_real(label, v, **declared["range"])
            if declared.get("pulls") and float(v) != int(float(v)):
                raise ValueError(f"{label} must be a whole number of pulls, got {v!r}")
            if declared.get("pulls") and float(v) > INT32_MAX:
                raise ValueError(f"{label} must be at most {limit(INT32_MAX)} ({BUDGET_WHY}), got {show(v)}")
        elif f.name in getattr(obj, "dynamic_fields", ()):
            a = np.asarray(v) if not isinstance(v, (str, bytes)) else None
            if a is None or isinstance(v, (bool, np.bool_)) or not np.issubdtype(a.dtype, np.number):
                raise TypeError(f"{label} must be a number, got {show(v)} ({type(v).__name__})")
            if np.any(np.isnan(a)):
                raise ValueError(f"{label} must be a number, got {v!r}")
        elif isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and abs(int(v)) > INT32_MAX:
            raise ValueError(f"{label} must be an integer of magnitude at most {limit(INT32_MAX)} ({INT32_WHY}), "
                             f"got {int(v)}")
