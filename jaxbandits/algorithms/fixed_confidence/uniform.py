"""Uniform (round-robin) sampling with the GLR (Chernoff) stopping rule of seed 000.

The simplest delta-PAC algorithm for linear best-arm identification: pull the arms in turn and
stop with the stopping rule (8) of Jedra & Proutiere (seed 000 Sec 3.4):

    tau = inf{t : Z(t) > beta(delta, t)  and  A_t >= c I_d},

with Z(t) the GLR statistic of Lemma 7, beta the threshold of Prop 2 / eq. (9), and the choices of
Remark 1: c = max_a ||a||^2, u = 1.  Prop 2 makes it delta-correct under any sampling rule; the
round-robin rule makes lambda_min(A_t) grow linearly, so it stops.  It is the engine's reference
workload and the baseline every adaptive algorithm should beat.

Transductive instances (Z != X) are allowed: the GLR statistic is computed over the items.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.rules import sampling, stopping
from jaxbandits.rules.composition import Composed, Composition


@dataclasses.dataclass(frozen=True)
class UniformGLR(Composed):
    """Round-robin sampling + GLR stopping (seed 000 Sec 3.4, eq. (8)-(9), Remark 1): the
    composition of :class:`jaxbandits.rules.sampling.RoundRobin` and
    :class:`jaxbandits.rules.stopping.GLR`.

    Elimination at sampling (:class:`jaxbandits.algorithms.Eliminate`) changes nothing for this
    algorithm: the round-robin rule computes no closest alternative.

    Attributes:
      delta: confidence level.
      u: the constant u of Prop 2 (Remark 1: u = 1).
      sigma: sub-Gaussian noise scale (default: taken from the instance).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    u: float = hyperparameter(1.0, low=0.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    supports_padding: ClassVar[bool] = True  # round robin over the real arms, GLR over the real items

    def rules(self) -> Composition:
        return Composition(sampling.RoundRobin(), stopping.GLR(u=self.u), delta=self.delta, sigma=self.sigma,
                           name="UniformGLR")
