"""Algorithm kernels, one module per family (see :mod:`jaxbandits.algorithms.base`)."""
from jaxbandits.algorithms.base import Algorithm, Outcome, is_correct  # noqa: F401
