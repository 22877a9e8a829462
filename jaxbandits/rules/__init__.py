"""The rules an algorithm is built from, below the algorithms that combine them.

* :mod:`jaxbandits.rules.thresholds`: every stopping threshold (and confidence width) the library
  uses, each written once as a pure ``jax.numpy`` function with its paper and equation, and one
  registry of their names (:data:`jaxbandits.rules.thresholds.RULES`).
"""
