"""Recommendation rules: the answer a GLR stopping rule certifies, with its statistic.

A recommendation rule maps the estimate (theta_hat, V^-1) to (Z, answer): the answer returned if
the algorithm stopped now and the GLR statistic min_j W^eps_{answer,j} of that answer against
every other item j (Jourdan & Degenne, ICML 2022, Sec 2: W^eps_{i,j} =
(theta^T (z_i - z_j) + eps)_+^2 / (2 ||z_i - z_j||^2_{V^-1}), :func:`jaxbandits.algorithms.glr.transport_costs`).

* :class:`EmpiricalBest`: the empirical best item argmax_i z_i^T theta_hat.
* :class:`FurthestAnswer`: the furthest answer argmax_i min_{j != i} W^eps_{i,j} (Jourdan & Degenne
  Sec 3), the answer whose epsilon-alternative is furthest, i.e. the one the stopping rule can
  certify first; with eps = 0 it is the empirical best item.  Searched among the ``candidates``
  items of largest empirical value: exact whenever at most that many items are empirically
  eps-good, since every other item i has min_j W^eps_{i,j} = 0.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common, glr
from jaxbandits.algorithms.base import Configurable, hyperparameter


def answer_glr(theta, Ainv, Z, epsilon, candidates: int, furthest: bool):
    """(GLR statistic, answer): the furthest answer among the ``candidates`` items of largest
    value (``furthest``) or the empirical best item, with its min_j W^eps_{i,j} (module docstring)."""
    values = Z @ theta
    if not furthest:
        i = common.argmax_fast(values)
        W, _, _ = glr.transport_costs(theta, Ainv, Z, i, epsilon)
        return jnp.min(W), i
    _, idx = jax.lax.top_k(values, candidates)
    Wmin = jax.vmap(lambda i: jnp.min(glr.transport_costs(theta, Ainv, Z, i, epsilon)[0]))(idx)
    k = common.argmax_fast(Wmin)
    return Wmin[k], idx[k]


@dataclasses.dataclass(frozen=True)
class EmpiricalBest(Configurable):
    """The empirical best item and its GLR statistic (module docstring)."""

    def __call__(self, theta, Ainv, Z, epsilon):
        return answer_glr(theta, Ainv, Z, epsilon, 1, furthest=False)


@dataclasses.dataclass(frozen=True)
class FurthestAnswer(Configurable):
    """The furthest answer among the ``candidates`` items of largest value (static), and its GLR
    statistic (module docstring; Jourdan & Degenne, ICML 2022, Sec 3)."""

    candidates: int = hyperparameter(16, count=1)

    def __call__(self, theta, Ainv, Z, epsilon):
        return answer_glr(theta, Ainv, Z, epsilon, min(int(self.candidates), Z.shape[0]), furthest=True)
