"""GLR pieces shared by FWS and Top Two: the pairwise transportation costs and the stopping
thresholds their papers' experiments use.

Transportation cost (GLR of answer i against the piece j of its alternative, Gaussian linear
model, unit variance): W_{i,j} = (theta^T (z_i - z_j) + eps)_+^2 / (2 ||z_i - z_j||^2_{V^-1})
(Jourdan & Degenne, ICML 2022, Sec 2, the epsilon-alternative {lambda : lambda^T (z_j - z_i) > eps};
eps = 0 is seed 000 Lemma 7).  The noise scale enters on the threshold's side: stop when
min_j W_{i,j} > sigma^2 beta(t, delta) (the sigma^2-variance GLR is W / sigma^2).

Thresholds (``threshold=``, :data:`jaxbandits.rules.thresholds.ALIASES` ``["glr"]``):

* ``"heuristic"``: beta(t, delta) = log((1 + log t) / delta) (rule ``log_log_t``), the threshold of
  the experiments of Wang et al. 2021 (released code, ``GK16``: "recommended in Sec 6 of Garivier &
  Kaufmann 2016") and of Jourdan et al. 2022 (Top Two revisited, Sec 6; epsilon-BAI for linear
  bandits, Sec 6).  Not proven delta-correct (it has no dimension term); the calibration suite
  measures its error.
* ``"lts"``: seed 000 Prop 2 / eq. (9) (rule ``prop2``) with u = 1, c = max_a ||a||^2 and the union
  over rounds delta_t = 6 delta / (pi^2 t^2) (Sec 5), proven delta-correct for the least-squares GLR.
* ``"log_t"``: log((t + 1) / delta) (rule ``log_t``), Tirinzoni & Degenne 2022's.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxbandits.rules import thresholds

THRESHOLDS = thresholds.names("glr")


def check_threshold(kind: str) -> None:
    thresholds.resolve("glr", kind)


def stopping_threshold(kind: str, gram: jax.Array, t: jax.Array, delta, sigma, c) -> jax.Array:
    """sigma^2 beta(t, delta) for the unit-variance statistic (module docstring).  ``gram``: A_t
    (only "lts" reads it); ``c``: max_a ||a||^2 (only "lts")."""
    t = jnp.maximum(jnp.asarray(t, gram.dtype), 1.0)
    rule = thresholds.resolve("glr", kind)
    if rule == "log_log_t":
        return sigma**2 * thresholds.log_log_t(t, delta)
    if rule == "log_t":
        return sigma**2 * thresholds.log_t(t, delta)
    return thresholds.prop2(gram, thresholds.anytime_delta(delta, t), sigma, c, 1.0)


#: log((t + 1) / delta) (:func:`jaxbandits.rules.thresholds.log_t`), its name here
log_t_threshold = thresholds.log_t


def ridge_glr_row(theta: jax.Array, Vinv: jax.Array, Z: jax.Array, best: jax.Array):
    """[M] GLR of the empirical best item against every item j, with the ridge inverse
    V^-1 = (A_t + reg I)^-1 in the norm: (d_j^T theta)_+^2 / (2 ||d_j||^2_{V^-1}), d_j = z_best - z_j
    (the ``alternative`` of Tirinzoni & Degenne's released code, ``utils.jl``); +inf where
    z_j = z_best.  Unit variance."""
    D = Z[best][None, :] - Z
    gaps = jnp.maximum(D @ theta, 0.0)
    q = jnp.sum((D @ Vinv) * D, axis=-1)
    same = jnp.all(D == 0, axis=-1)
    return jnp.where(same, jnp.inf, gaps * gaps / (2.0 * jnp.maximum(q, 1e-300)))


def transport_costs(theta: jax.Array, Ainv: jax.Array, Z: jax.Array, i: jax.Array, epsilon=0.0):
    """W_{i,j} for every item j [M] (module docstring); +inf where z_j = z_i (j = i included).

    Returns (W [M], gaps theta^T (z_i - z_j) [M], ||z_i - z_j||^2_{V^-1} [M])."""
    D = Z[i][None, :] - Z
    gaps = D @ theta
    norms = jnp.sum((D @ Ainv) * D, axis=-1)
    num = jnp.maximum(gaps + epsilon, 0.0)
    same = jnp.all(D == 0, axis=-1)
    W = jnp.where(same, jnp.inf, num * num / (2.0 * jnp.maximum(norms, 1e-300)))
    return W, gaps, norms
