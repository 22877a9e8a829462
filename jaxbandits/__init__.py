"""jaxbandits: batched pure-exploration linear bandits in JAX.

Importing the package turns on 64-bit floats (``jax_enable_x64``): gaps in the seed instances go
down to 1e-4 and runs reach millions of rank-one updates, where float32 decides stopping times
wrongly (DESIGN.md, Numerics).  Pass float32 arrays explicitly to trade precision for speed.
"""
import os as _os

# XLA:CPU's multi-threaded Eigen pool was seen to wedge (all threads asleep in futex waits, no
# progress) on the engine's long vmapped while_loops, with 1 and with 2 host devices (LT&S, GSE,
# LinUCB); the same symptom and this workaround are reported for other vmap-heavy JAX code.
# Single-threaded Eigen inside each op removes it; set JAXBANDITS_EIGEN_THREADS=1 to opt out.
# Must happen before the backend starts, i.e. before the first computation.
if _os.environ.get("JAXBANDITS_EIGEN_THREADS", "0") != "1":
    _flags = _os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in _flags:
        _os.environ["XLA_FLAGS"] = (_flags + " --xla_cpu_multi_thread_eigen=false").strip()

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from jaxbandits import environment  # noqa: E402
from jaxbandits.instances.base import Instance, make_instance, stack  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Instance", "make_instance", "stack", "environment", "__version__"]
