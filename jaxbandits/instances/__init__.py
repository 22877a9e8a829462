"""Problem instances of the seed papers (one named generator each) and instances from data."""
from jaxbandits.instances.base import Instance, as_batch, make_instance, stack, validate_instance  # noqa: F401
