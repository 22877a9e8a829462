"""jaxbandits: batched pure-exploration linear bandits in JAX.

Importing the package changes no JAX setting.  The library's entry points (``simulate``, the
instance constructors and generators, the design solvers, stats, sweeps, calibration) run in
float64 inside themselves (:mod:`jaxbandits.precision`): gaps in the seed instances go down to 1e-4
and runs reach millions of pulls, where float32 decides stopping times wrongly (docs/design.md,
Numerics).  ``simulate(..., precision="float32")`` is offered where float32 was validated.

One import reaches the library::

    import jaxbandits as jb

    inst = jb.seeds.soare_benchmark(d=3, omega=0.3, theta_scale=1.0)
    res = jb.simulate(jb.algorithms.RAGE(delta=0.05), inst, 0, n_reps=100, max_steps=10**5)
    print(res.summary(), jb.lower_bound(inst, 0.05))

``jb.algorithms`` (every algorithm), ``jb.instances`` and ``jb.seeds`` (instances and the named
generators of the papers), ``jb.design`` (optimal-design solvers, ``jb.lower_bound``,
``jb.characteristic_time``), ``jb.rules`` (sampling, stopping, recommendation and elimination
rules, and every stopping threshold, one name each) and ``jb.compose`` (an algorithm from rules),
``jb.simulate`` / ``jb.Results``, ``jb.sweep`` / ``jb.Generator``,
``jb.calibrate`` / ``jb.benchmark``, ``jb.stats``.  ``__all__`` (and ``dir(jb)``) is that surface;
the modules behind it (the engine's layout policy, batching, validation, the compilation cache,
...) stay importable by their full names.
"""
from jaxbandits import algorithms, design, environment, instances, precision, rules  # noqa: E402
from jaxbandits.design import characteristic_time, lower_bound  # noqa: E402
from jaxbandits.instances import seeds  # noqa: E402
from jaxbandits.instances.base import Buckets, Instance, make_instance, pad_to, stack  # noqa: E402
from jaxbandits.sweeps import Generator, sweep  # noqa: E402

__version__ = "0.1.0"
__all__ = ["simulate", "Results", "RESULTS", "algorithms", "instances", "seeds", "design", "rules", "compose",
           "lower_bound",
           "characteristic_time", "Instance", "make_instance", "stack", "pad_to", "Buckets", "environment",
           "precision", "sweep", "Generator", "calibrate", "benchmark", "stats", "__version__"]

#: names imported on first use: the engine (``simulate`` and its results), ``calibrate`` /
#: ``benchmark`` (which load the calibration and benchmark suites), and ``stats`` (scipy)
_LAZY = {"simulate": ("jaxbandits.engine", "simulate"), "Results": ("jaxbandits.engine", "Results"),
         "RESULTS": ("jaxbandits.engine", "RESULTS"), "calibrate": ("jaxbandits.byo", "calibrate"),
         "benchmark": ("jaxbandits.benchmarking", "benchmark"), "compose": ("jaxbandits.rules.composition", "compose"),
         "stats": ("jaxbandits.stats", None)}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return importlib.import_module(module) if attr is None else getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'jaxbandits' has no attribute {name!r}")


def __dir__():
    # the public surface only: importing the library loads internal modules (batching, validation,
    # ...) as attributes of the package, which tab completion should not offer
    return sorted(__all__)
