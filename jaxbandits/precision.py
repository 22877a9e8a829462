"""Precision policy: float64 inside the library's entry points, no global JAX setting touched.

Importing :mod:`jaxbandits` changes no JAX configuration.  The statistics need float64 (gaps in
the seed instances go down to 1e-4 and runs reach millions of pulls; docs/design.md, Numerics), so
every public entry point (:func:`jaxbandits.engine.simulate`, the instance constructors and
generators, the design solvers, :mod:`jaxbandits.stats`, sweeps and calibration) runs its body
under ``jax.enable_x64(True)`` (:func:`float64_entry`): arrays it creates are float64 whatever the
caller's global setting, and the caller's own JAX code keeps the caller's setting.  Arrays an
entry point returns stay float64; JAX operations the caller applies to them *outside* x64 are
computed in float32 (JAX's rule, not ours).  The command line, the experiments and the tests turn
x64 on globally (:func:`enable_globally`), as the package did on import before.

float32 is offered only where a two-sample test against float64 on the seed instances showed the
same distribution of sample complexity and error rate: the algorithm's class declares it,
``float32_validated = True`` (:class:`jaxbandits.algorithms.base.Algorithm`; today RAGE; the
evidence in docs/design.md, Numerics): ``simulate(..., precision="float32")`` then runs the whole program
with x64 off.  A float32 instance handed to ``simulate`` without that request is refused
(:func:`require_float64`): before this policy such runs silently shifted RAGE's mean sample
complexity on Soare d = 5 by -7 % (713,361 +- 15,828 against 766,115 +- 9,791, 1000 replications
each).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

PRECISIONS = ("float64", "float32")


def float32_validated(algorithm) -> bool:
    """Whether ``algorithm``'s class declares that its float32 runs passed the two-sample tests
    against float64 (KS and Welch on the sample complexity, binomial on the errors) on its seed
    instance: its own ``float32_validated`` class attribute, not inherited (a subclass changes the
    numerics it was validated with until shown otherwise)."""
    return bool(type(algorithm).__dict__.get("float32_validated", False))


def float64_entry(fn):
    """Run ``fn`` under ``jax.enable_x64(True)`` unless x64 is already on (then it costs nothing;
    in particular inside the library's own traced code, which already runs under x64)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if jax.config.jax_enable_x64:
            return fn(*args, **kwargs)
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    wrapper.__wrapped_float64__ = True
    # a jitted function keeps its AOT / cache handles (they trace under the caller's setting)
    for attr in ("lower", "trace", "eval_shape", "_cache_size", "clear_cache"):
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    return wrapper


def wrap_module(namespace: dict, names) -> None:
    """Replace every public function ``names`` of a module's namespace by its
    :func:`float64_entry` form (generators, constructors: one line instead of a decorator each)."""
    for name in names:
        obj = namespace.get(name)
        if callable(obj) and not isinstance(obj, type) and not getattr(obj, "__wrapped_float64__", False):
            namespace[name] = float64_entry(obj)


def enable_globally() -> None:
    """Turn ``jax_enable_x64`` on for the whole process: what the command line, the experiments and
    the test suite do (the library itself never calls it on import)."""
    jax.config.update("jax_enable_x64", True)


def float_dtype_of(tree) -> np.dtype | None:
    """The floating dtype of a pytree's floating leaves (None if it has none); ``ValueError`` if
    they mix float32 and float64."""
    dts = {np.dtype(a.dtype) for a in jax.tree.leaves(tree)
           if hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jnp.floating)}
    if not dts:
        return None
    if len(dts) > 1:
        raise ValueError(f"the instance mixes floating dtypes {sorted(map(str, dts))}; build it with "
                         "make_instance, which casts every leaf to one dtype")
    return dts.pop()


def resolve(precision: str | None, algorithm, instances) -> str:
    """The precision a run uses: ``precision`` if given (checked against the instance's dtype and
    :func:`float32_validated`), else float64 for a float64 instance; a float32 instance without
    ``precision="float32"`` is refused with a clear error."""
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS} (or None), got {precision!r}")
    dt = float_dtype_of(instances)
    name = type(algorithm).__name__
    if precision == "float32" or (precision is None and dt == np.float32):
        if not float32_validated(algorithm):
            raise ValueError(
                f"{name} is not validated in float32: its stopping decisions were not shown to keep the "
                "float64 distribution (docs/design.md, Numerics; its class does not declare "
                "float32_validated = True). Build the instance in float64 (make_instance's default) and "
                "leave precision=None; float32 is offered with precision='float32' for the algorithms that "
                "declare it (RAGE).")
        if precision is None:
            raise ValueError(
                f"float32 instance given to {name}: pass precision='float32' to run in float32 (validated for "
                f"{name}), or build the instance in float64 (make_instance's default)")
        return "float32"
    return "float64"


def context(precision: str):
    """The ``jax.enable_x64`` context a run of ``precision`` traces and runs under."""
    return jax.enable_x64(precision == "float64")


def cast_instance(instances, precision: str):
    """``instances`` with every floating leaf in the run's dtype (call inside :func:`context`)."""
    dt = jnp.float64 if precision == "float64" else jnp.float32
    return jax.tree.map(lambda a: jnp.asarray(a, dt) if jnp.issubdtype(a.dtype, jnp.floating) else a, instances)
