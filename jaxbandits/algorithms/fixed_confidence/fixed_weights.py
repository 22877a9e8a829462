"""The fixed-weights Oracle of Tirinzoni & Degenne, "On elimination strategies for bandit
fixed-confidence identification", NeurIPS 2022 (Sec 5, Table 1 "Oracle"; released code
``sampling_rules.jl``, ``FixedWeights``, and ``experiments/linear_bai.jl``).

The oracle knows the optimal allocation w* = argmax_w min_{z != z*} (theta^T (z* - z))^2 /
(2 ||z* - z||^2_{A(w)^-1}) of the true theta (the allocation of T*(theta), seed 000 eq. (1); here
:func:`jaxbandits.design.oracle_allocation`, solved once per instance in ``prepare``) and tracks it
with D-tracking: after every arm has been pulled once, pull argmin_k N_k(t) - t w*_k (ties: the
lowest index).  It stops with the GLR rule of the rest of the table: the ridge estimate
theta_hat = (A_t + reg I)^-1 b_t (reg = 1), Z(t) = min_{z != z_hat} (theta_hat^T (z_hat - z))^2 /
(2 ||z_hat - z||^2_{(A_t + reg I)^-1}), stop when Z(t) > sigma^2 beta(t, delta) with
beta = log((t + 1) / delta) (``threshold="log_t"``, the paper's experiments) or a threshold of
:mod:`.glr`; it returns the empirical best item z_hat, which can be wrong (the answer is not handed
to it).

As rules (:meth:`FixedWeightsOracle.rules`): :class:`~jaxbandits.rules.sampling.Tracking` of
:class:`~jaxbandits.rules.sampling.OracleWeights` without forced exploration, after each arm once
(:class:`~jaxbandits.rules.sampling.Initial` ``first="batch"``), stopped by
:class:`~jaxbandits.rules.stopping.EmpiricalGLR` in its ``"ridge"`` form.

This is not :class:`jaxbandits.algorithms.fixed_confidence.oracle.Oracle`, Fiez et al.'s phased
XY-oracle with its K-dependent elimination-style stop (seed 000 Table 1).
"""
from __future__ import annotations

import dataclasses

import jax

from jaxbandits import presets
from jaxbandits.algorithms import glr
from jaxbandits.algorithms.base import hyperparameter, instance_cache
from jaxbandits.instances.base import Instance
from jaxbandits.rules import sampling, stopping
from jaxbandits.rules.composition import Composed, Composition


@dataclasses.dataclass(frozen=True)
class FixedWeightsOracle(Composed):
    """D-tracking of the true optimal allocation w* with the GLR stopping rule (module docstring):
    the composition of :meth:`rules`.

    Attributes:
      delta: confidence level.
      threshold: a threshold of the GLR family ("log_t": log((t + 1) / delta), the paper's; "lts":
        seed 000 eq. (9) with the union over rounds, delta-correct).
      reg: ridge regulariser of the estimate and of the GLR (1 in the released code).
      sigma: sub-Gaussian noise scale (None: the instance's); enters the threshold.
      design_tol, design_iters: tolerance (relative duality gap) and iteration cap of w*'s solve.
    """

    delta: float = hyperparameter(0.01, low=0.0, high=1.0, traced=True)
    threshold: str = "log_t"
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    design_tol: float = hyperparameter(1e-6, low=0.0, traced=True)
    design_iters: int = hyperparameter(20_000, count=1)

    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "FixedWeightsOracle":
        """The Oracle row of Tirinzoni & Degenne 2022's Table 1 (the defaults); ``kw`` overrides."""
        return cls(**presets.TD_ORACLE.apply(**kw))

    def __post_init__(self):
        glr.check_threshold(self.threshold)

    def rules(self) -> Composition:
        """Each arm once, then D-tracking of w* (no forced exploration), stopped by the ridge GLR."""
        weights = sampling.OracleWeights(tol=self.design_tol, iters=self.design_iters)
        return Composition(sampling.Initial(sampling.Tracking(weights, forced=False), first="batch"),
                           stopping.EmpiricalGLR(threshold=self.threshold, reg=self.reg, form="ridge"),
                           delta=self.delta, sigma=self.sigma, name="FixedWeightsOracle")

    def weights(self, instance: Instance) -> jax.Array:
        """w* [K] of this instance (computed in ``prepare``)."""
        w = instance_cache(instance)
        if w is None:
            raise ValueError("FixedWeightsOracle needs the instance prepared (prepare) to know w*")
        return w
