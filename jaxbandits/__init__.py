"""jaxbandits: batched pure-exploration linear bandits in JAX.

Importing the package changes no JAX setting.  The library's entry points (``simulate``, the
instance constructors and generators, the design solvers, stats, sweeps, calibration) run in
float64 inside themselves (:mod:`jaxbandits.precision`): gaps in the seed instances go down to 1e-4
and runs reach millions of pulls, where float32 decides stopping times wrongly (docs/design.md,
Numerics).  ``simulate(..., precision="float32")`` is offered where float32 was validated.
"""
from jaxbandits import environment, precision  # noqa: E402
from jaxbandits.instances.base import Buckets, Instance, make_instance, pad_to, stack  # noqa: E402
from jaxbandits.sweeps import Generator, sweep  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Instance", "make_instance", "stack", "pad_to", "Buckets", "environment", "precision", "sweep",
           "Generator", "calibrate", "benchmark", "__version__"]


def __getattr__(name):  # calibrate / benchmark are imported on first use (they load every algorithm)
    if name == "calibrate":
        from jaxbandits.byo import calibrate

        return calibrate
    if name == "benchmark":
        from jaxbandits.benchmarking import benchmark

        return benchmark
    raise AttributeError(f"module 'jaxbandits' has no attribute {name!r}")
