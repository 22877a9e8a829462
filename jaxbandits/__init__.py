"""jaxbandits: batched pure-exploration linear bandits in JAX.

Importing the package turns on 64-bit floats (``jax_enable_x64``): gaps in the seed instances go
down to 1e-4 and runs reach millions of rank-one updates, where float32 decides stopping times
wrongly (DESIGN.md, Numerics).  Pass float32 arrays explicitly to trade precision for speed.
"""
import jax as _jax

_jax.config.update("jax_enable_x64", True)

from jaxbandits import environment  # noqa: E402
from jaxbandits.instances.base import Buckets, Instance, make_instance, pad_to, stack  # noqa: E402
from jaxbandits.sweeps import Generator, sweep  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Instance", "make_instance", "stack", "pad_to", "Buckets", "environment", "sweep", "Generator", "__version__"]
