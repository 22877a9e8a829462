"""The rules an algorithm is built from, below the algorithms that combine them.

* :func:`compose` (:mod:`jaxbandits.rules.composition`): a sampling rule, a stopping rule and optional
  elimination as one algorithm, which ``simulate``, ``sweep``, ``calibrate`` and ``benchmark`` take
  like any other;
* :mod:`jaxbandits.rules.sampling`: sampling rules (round robin, initialisation, Top Two's leaders,
  challenger and allocations);
* :mod:`jaxbandits.rules.stopping`: GLR stopping rules; :mod:`jaxbandits.rules.recommend`: the
  answer they certify;
* :mod:`jaxbandits.rules.lazy`: seed 000's rules (forced exploration, tracking and lazy updates of
  the plug-in allocation; the stopping rule (8)), of which LT&S is the composition;
* :mod:`jaxbandits.rules.gap`: seed 003's rules (gap indices, the pair (b_t, c_t) and its stopping
  tests; the selection rules), of which the GIFA family is the composition;
* :mod:`jaxbandits.rules.elimination`: elimination at stopping and at sampling, and the protocols
  an algorithm implements to be eliminated from;
* :mod:`jaxbandits.rules.thresholds`: every stopping threshold (and confidence width) the library
  uses, each written once with its paper and equation, and one registry of their names
  (:data:`jaxbandits.rules.thresholds.RULES`);
* :mod:`jaxbandits.rules.core`: the contract of a rule (:class:`~jaxbandits.rules.core.SamplingRule`,
  :class:`~jaxbandits.rules.core.StoppingRule`, :class:`~jaxbandits.rules.core.Belief`,
  :class:`~jaxbandits.rules.core.Context`).

The names below are loaded on first use: the algorithms import the rules' modules, and the rules
build on the algorithms' shared pieces.
"""
import importlib

_MODULES = ("composition", "core", "elimination", "recommend", "sampling", "stopping", "thresholds", "karmed",
            "lazy", "gap")
_NAMES = {"compose": "composition", "Composition": "composition", "Composed": "composition", "Elimination": "elimination",
          "SamplingRule": "core", "StoppingRule": "core", "Belief": "core", "Context": "core", "Decision": "core"}

__all__ = ["compose", "Composition", "Composed", "Elimination", "SamplingRule", "StoppingRule", "Belief",
           "Context", "Decision", "composition", "core", "elimination", "recommend", "sampling", "stopping", "thresholds", "karmed", "lazy", "gap"]


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(f"jaxbandits.rules.{_NAMES[name]}"), name)
    if name in _MODULES:
        return importlib.import_module(f"jaxbandits.rules.{name}")
    raise AttributeError(f"module 'jaxbandits.rules' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
