"""K-armed bandits in a one-parameter exponential family: the divergences, and the characteristic
time T*(mu) with the optimal proportions w*(mu) of Garivier & Kaufmann (COLT 2016), solved with
fixed trip counts and certified by a duality gap.

Families (``family``), each with its Kullback-Leibler divergence d(x, y) between the
distributions of means x and y:

* ``"gaussian"``: N(mu, sigma^2) with known sigma, d(x, y) = (x - y)^2 / (2 sigma^2);
* ``"bernoulli"``: d(x, y) = x log(x / y) + (1 - x) log((1 - x) / (1 - y)), both arguments
  clipped to [1e-15, 1 - 1e-15] as in the authors' released code (``KLfunctions.jl``), so that
  empirical means 0 and 1 give finite values.

The characteristic time (Garivier & Kaufmann 2016, Theorem 1 and Sec 2.2): with best arm 1,

    T*(mu)^-1 = sup_{w in Sigma_K} min_{a != 1} (w_1 + w_a) I_{w_1 / (w_1 + w_a)}(mu_1, mu_a),
    I_alpha(mu_1, mu_a) = alpha d(mu_1, m) + (1 - alpha) d(mu_a, m),  m = alpha mu_1 + (1 - alpha) mu_a,

and every delta-correct algorithm has E[tau] >= T*(mu) kl(delta, 1 - delta).  Its solution
(Lemma 3 and Theorem 5): with g_a(x) = d(mu_1, m_a(x)) + x d(mu_a, m_a(x)),
m_a(x) = (mu_1 + x mu_a) / (1 + x), increasing from 0 to d(mu_1, mu_a) on [0, inf), and
x_a(y) = g_a^{-1}(y), the function
F(y) = sum_{a != 1} d(mu_1, m_a(x_a(y))) / d(mu_a, m_a(x_a(y))) increases from 0 to +inf on
[0, d(mu_1, mu_2)); its root y* of F(y*) = 1 gives w*_1 = 1 / (1 + sum_a x_a(y*)),
w*_a = x_a(y*) w*_1 and T*(mu)^-1 = w*_1 y*.

:func:`optimal_weights` solves it by nested safeguarded Newton steps with fixed trip counts
(``outer`` on y, ``inner`` on each x_a(y), the arms at once; a step that leaves its bracket bisects
it), so that it jit-compiles and vmaps over any number of lanes with no data-dependent loop.  The
Gaussian family has x_a(y) in closed form (g_a(x) = x / (1 + x) Delta_a^2 / (2 sigma^2)) and needs
the outer steps only.

Certificate.  For the returned w, the primal value L = min_a (w_1 + w_a) I(...) <= T*^-1; for
the alternatives lambda^a (lambda^a_1 = lambda^a_a = the weighted mean m_a at w, the other means
unchanged) and the mixture q_a proportional to 1 / d(mu_a, m_a), every allocation w' has
min_a inf_{Alt_a} sum_k w'_k d(mu_k, lambda_k) <= sum_k w'_k c_k with c_1 = sum_a q_a d(mu_1, m_a)
and c_a = q_a d(mu_a, m_a), so U = max_k c_k >= T*^-1 (weak duality; at the optimum
F(y*) = 1 makes every c_k equal to L).  The solution reports T*(w) = 1 / L (an upper bound on T*),
and the certified gap 1 / L - 1 / U >= T*(w) - T*.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxbandits.design.core import DesignSolution

FAMILIES = ("gaussian", "bernoulli")

#: the clipping of Bernoulli means in the divergence (Garivier & Kaufmann's ``KLfunctions.jl``)
BERNOULLI_EPS = 1e-15


def check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")


def kl_gaussian(x, y, sigma=1.0):
    """d(x, y) = (x - y)^2 / (2 sigma^2): the divergence of N(x, sigma^2) from N(y, sigma^2)."""
    return (x - y) ** 2 / (2.0 * sigma**2)


def kl_bernoulli(x, y):
    """d(x, y) = x log(x / y) + (1 - x) log((1 - x) / (1 - y)), x and y clipped to
    [1e-15, 1 - 1e-15] (module docstring)."""
    x = jnp.clip(x, BERNOULLI_EPS, 1.0 - BERNOULLI_EPS)
    y = jnp.clip(y, BERNOULLI_EPS, 1.0 - BERNOULLI_EPS)
    return x * jnp.log(x / y) + (1.0 - x) * jnp.log((1.0 - x) / (1.0 - y))


def divergence(family: str, x, y, sigma=1.0):
    """d(x, y) of the family (module docstring); ``sigma`` is read by the Gaussian family only."""
    check_family(family)
    if family == "gaussian":
        return kl_gaussian(x, y, sigma)
    return kl_bernoulli(x, y)


def pair_cost(family: str, mu_i, mu_j, n_i, n_j, sigma=1.0):
    """n_i d(mu_i, m) + n_j d(mu_j, m), m = (n_i mu_i + n_j mu_j) / (n_i + n_j): the generalized
    likelihood ratio of "mu_i >= mu_j" against "mu_i <= mu_j" when mu_i > mu_j (Garivier & Kaufmann
    2016, Sec 3.2, Z_{a,b}(t)), and (n_i + n_j) I_{n_i / (n_i + n_j)}(mu_i, mu_j) of the lower bound.
    0 where n_i + n_j = 0."""
    tot = n_i + n_j
    m = (n_i * mu_i + n_j * mu_j) / jnp.where(tot > 0, tot, 1.0)
    cost = n_i * divergence(family, mu_i, m, sigma) + n_j * divergence(family, mu_j, m, sigma)
    return jnp.where(tot > 0, cost, 0.0)


#: the smallest s = 1 / (1 + x) the inner solver brackets (x_a(y) up to 1e18)
S_MIN = 1e-18


def _dm_divergence(family, p, m, sigma):
    """d/dm d(p, m) = (m - p) / V(m), V the variance function (sigma^2; m (1 - m))."""
    if family == "gaussian":
        return (m - p) / sigma**2
    m = jnp.clip(m, BERNOULLI_EPS, 1.0 - BERNOULLI_EPS)
    return (m - p) / (m * (1.0 - m))


def _inner(family, mu_b, mu, y, s, iters: int, sigma):
    """s_a = 1 / (1 + x_a(y)) for every arm (module docstring), by ``iters`` safeguarded Newton
    steps from ``s`` on g(s) = d(mu_b, m) + (1 - s) / s d(mu_a, m), m = mu_a + s (mu_b - mu_a),
    which decreases from d(mu_b, mu_a) at s = 0 to 0 at s = 1, with dg/ds = -d(mu_a, m) / s^2 (the
    envelope theorem: m minimises d(mu_b, .) + x d(mu_a, .)); a step that leaves the bracket
    bisects it."""
    if family == "gaussian":       # closed form: g = (1 - s) Delta^2 / (2 sigma^2)
        c = kl_gaussian(mu_b, mu, sigma)
        return jnp.clip(1.0 - y / jnp.maximum(c, 1e-300), 1e-300, 1.0)

    def body(_, carry):
        s, lo, hi = carry
        m = mu + s * (mu_b - mu)
        da = divergence(family, mu, m, sigma)
        g = divergence(family, mu_b, m, sigma) + (1.0 - s) / s * da
        above = g > y
        lo, hi = jnp.where(above, s, lo), jnp.where(above, hi, s)
        step = s + (g - y) * s * s / jnp.maximum(da, 1e-300)
        ok = (step >= lo) & (step <= hi)
        return jnp.where(ok, step, 0.5 * (lo + hi)), lo, hi

    s0 = jnp.clip(s, S_MIN, 1.0 - 1e-12)
    s, _, _ = jax.lax.fori_loop(0, iters, body, (s0, jnp.full_like(mu, S_MIN), jnp.ones_like(mu)), unroll=2)
    return s


def _ratios(family, mu_b, mu, others, s, sigma):
    """(F, dF/dy): F = sum_a d(mu_b, m_a) / d(mu_a, m_a) at m_a = mu_a + s_a (mu_b - mu_a), and its
    derivative through dx_a/dy = 1 / d(mu_a, m_a)."""
    x = (1.0 - s) / s
    m = mu + s * (mu_b - mu)
    db = divergence(family, mu_b, m, sigma)
    da = jnp.maximum(divergence(family, mu, m, sigma), 1e-300)
    r = db / da
    dr_dm = (_dm_divergence(family, mu_b, m, sigma) * da - db * _dm_divergence(family, mu, m, sigma)) / (da * da)
    dm_dx = (mu - mu_b) * s * s                                  # (mu_a - mu_b) / (1 + x)^2
    dF = dr_dm * dm_dx / da
    del x
    return jnp.sum(jnp.where(others, r, 0.0)), jnp.sum(jnp.where(others, dF, 0.0))


def _best_arm(mu, mask):
    """(real arms, the best arm, its mean, the arms tied with it, whether there is a tie, the other
    real arms, mu with the padded arms' means set below the best) of a K-armed instance."""
    K = mu.shape[-1]
    real = jnp.ones((K,), bool) if mask is None else jnp.asarray(mask, bool)
    vals = jnp.where(real, mu, -jnp.inf)
    best = jnp.argmax(vals)
    top = vals[best]
    tied = real & (mu == top)
    others = real & (jnp.arange(K) != best)
    return real, best, top, tied, jnp.sum(tied) > 1, others, jnp.where(real, mu, top - 0.5)


def _solution(w, bounds, ties, tied, tol, iters) -> DesignSolution:
    """w*, T* = 1 / L and the certified gap 1 / L - 1 / U from the certificate's bounds (L, U) on
    the max-min value; uniform over the tied best arms, T* = inf, where the best arm is tied."""
    L, U = bounds
    value = 1.0 / L
    gap = jnp.maximum(value - 1.0 / U, 0.0)
    w = jnp.where(ties, tied.astype(w.dtype) / jnp.sum(tied), w)
    value = jnp.where(ties, jnp.inf, value)
    gap = jnp.where(ties, 0.0, gap)
    return DesignSolution(w, value, gap, jnp.asarray(iters, jnp.int32), ties | (gap <= tol * value))


def certificate(family: str, mu, w, best, others, sigma=1.0):
    """(L, U): the primal value min_{a != best} (w_b + w_a) I(...) at ``w`` and the dual bound of
    the module docstring, L <= T*(mu)^-1 <= U."""
    wb, mb = w[best], mu[best]
    tot = wb + w
    m = (wb * mb + w * mu) / jnp.where(tot > 0, tot, 1.0)
    cost = pair_cost(family, mb, mu, wb, w, sigma)
    L = jnp.min(jnp.where(others, cost, jnp.inf))
    d_b = divergence(family, mb, m, sigma)
    d_a = divergence(family, mu, m, sigma)
    inv = jnp.where(others, 1.0 / jnp.maximum(d_a, 1e-300), 0.0)
    q = inv / jnp.sum(inv)
    U = jnp.maximum(jnp.sum(jnp.where(others, q * d_b, 0.0)), 1.0 / jnp.sum(inv))
    return L, U


def optimal_weights(mu, family: str = "bernoulli", *, sigma=1.0, mask=None, outer: int = 12,
                    inner: int = 8, tol: float = 1e-6) -> DesignSolution:
    """w*(mu) and T*(mu) of a K-armed bandit in a one-parameter exponential family (Garivier &
    Kaufmann 2016, Lemma 3 and Theorem 5; module docstring), with fixed trip counts.

    The root y* of F(y) = 1 is found by ``outer`` safeguarded Newton steps on [0, d(mu_1, mu_2)]
    (a step that leaves the bracket bisects it), each x_a(y) by ``inner`` safeguarded Newton steps
    warm-started from the previous outer step's (the Gaussian family: closed form).  Every step is a
    fixed-size array operation: no data-dependent loop, so it vmaps over any number of lanes.

    Args:
      mu: [K] the arms' means (one instance; ``jax.vmap`` for a batch).
      family: "gaussian" (known variance ``sigma^2``) or "bernoulli".
      sigma: the Gaussian standard deviation (read by the Gaussian family only).
      mask: [K] bool, the real arms (None: all); the others get weight 0.
      outer, inner: the trip counts (static).
      tol: ``converged`` when the certified relative gap is at most ``tol``.

    Returns:
      :class:`~jaxbandits.design.core.DesignSolution`: ``allocation`` w [K], ``value`` T*(w) =
      1 / L (the characteristic time of w, an upper bound on T*(mu); unit: pulls per unit of
      log(1/delta)), ``gap`` the certified bound on T*(w) - T*(mu), ``iterations`` = outer,
      ``converged`` gap <= tol * value.  With tied best means T* = +inf: w is uniform on the
      tied arms (the authors' convention), ``value`` = +inf, ``gap`` = 0.
    """
    check_family(family)
    mu = jnp.asarray(mu)
    if not jnp.issubdtype(mu.dtype, jnp.floating):
        mu = mu.astype(jnp.result_type(float))
    K = mu.shape[-1]
    dt = mu.dtype
    real, best, top, tied, ties, others, mu_safe = _best_arm(mu, mask)
    sigma = jnp.asarray(sigma, dt)
    # the pole of F: the smallest d(mu_b, mu_a) over the other arms (the second best's)
    ymax = jnp.min(jnp.where(others, divergence(family, top, mu_safe, sigma), jnp.inf))
    ymax = jnp.where(ties | ~jnp.isfinite(ymax), 1.0, ymax)
    s_init = jnp.full((K,), 0.5, dt)
    y0 = 0.5 * ymax

    def outer_body(_, carry):
        y, lo, hi, s = carry
        s = _inner(family, top, mu_safe, y, s, inner, sigma)
        F, dF = _ratios(family, top, mu_safe, others, s, sigma)
        low = F < 1.0
        lo, hi = jnp.where(low, y, lo), jnp.where(low, hi, y)
        # Newton on log F(y) = 0: log F grows like log y near 0 and like -log(y_max - y) near the
        # pole, where Newton on F itself crawls
        step = y - jnp.log(jnp.maximum(F, 1e-300)) * F / jnp.where(dF > 0, dF, jnp.inf)
        ok = (step >= lo) & (step <= hi)
        return jnp.where(ok, step, 0.5 * (lo + hi)), lo, hi, s

    y, _, _, s = jax.lax.fori_loop(0, outer, outer_body, (y0, jnp.zeros((), dt), ymax, s_init))
    s = _inner(family, top, mu_safe, y, s, inner, sigma)
    x = jnp.where(others, (1.0 - s) / s, 0.0)
    x = jnp.where(jnp.arange(K) == best, 1.0, x)
    w = x / jnp.sum(x)
    return _solution(w, certificate(family, mu_safe, w, best, others, sigma), ties, tied, tol, outer)


def heteroscedastic_weights(mu, sigma, *, mask=None, iters: int = 40, tol: float = 1e-6) -> DesignSolution:
    """w*(mu, sigma^2) and T*(mu, sigma^2) of Gaussian arms with known per-arm variances sigma_a^2.

    The divergence of arm a is d_a(x, y) = (x - y)^2 / (2 sigma_a^2), so (Garivier & Kaufmann 2016,
    Theorem 1, with these divergences; Jourdan, Degenne & Kaufmann, "Dealing with unknown variances
    in best-arm identification", ALT 2023, the known-variance characteristic time)

        T*(mu, sigma^2)^-1 = max_w min_{a != 1} (mu_1 - mu_a)^2 / (2 (sigma_1^2 / w_1 + sigma_a^2 / w_a)).

    With x_a = w_a / w_1 and every pair at the common value w_1 y: x_a(y) = sigma_a^2 y /
    (c_a - sigma_1^2 y), c_a = (mu_1 - mu_a)^2 / 2, on 0 <= y < min_a c_a / sigma_1^2, and the
    stationarity of w_1 y = y / (1 + sum_a x_a(y)) reads
    F(y) = sum_{a != 1} (sigma_1^2 / sigma_a^2) x_a(y)^2 = 1 (the analogue of Theorem 5's
    F(y) = sum_a d(mu_1, m_a) / d(mu_a, m_a); equal sigmas give the closed form of the Gaussian
    family).  F increases from 0 to +inf, and its root is found by ``iters`` safeguarded Newton
    steps on log F (fixed trip count).  The certificate is :func:`certificate`'s with these
    divergences (the alternatives at the precision-weighted means).

    Args:
      mu: [K] means.
      sigma: [K] the arms' standard deviations.
      mask: [K] bool, the real arms (None: all).
      iters: Newton steps (static).
      tol: ``converged`` when the certified relative gap is at most ``tol``.

    Returns:
      :class:`~jaxbandits.design.core.DesignSolution` as :func:`optimal_weights`.
    """
    mu = jnp.asarray(mu)
    if not jnp.issubdtype(mu.dtype, jnp.floating):
        mu = mu.astype(jnp.result_type(float))
    dt = mu.dtype
    K = mu.shape[-1]
    s2 = jnp.broadcast_to(jnp.asarray(sigma, dt) ** 2, (K,))
    real, best, top, tied, ties, others, mu_safe = _best_arm(mu, mask)
    s2 = jnp.where(real, s2, 1.0)
    s1 = s2[best]
    c = 0.5 * (top - mu_safe) ** 2
    ymax = jnp.min(jnp.where(others, c / s1, jnp.inf))
    ymax = jnp.where(ties | ~jnp.isfinite(ymax), 1.0, ymax)

    def xs(y):
        den = jnp.maximum(c - s1 * y, 1e-300)
        x = jnp.where(others, s2 * y / den, 0.0)
        dx = jnp.where(others, s2 * c / (den * den), 0.0)
        return x, dx

    def body(_, carry):
        y, lo, hi = carry
        x, dx = xs(y)
        F = jnp.sum(s1 / s2 * x * x)
        dF = jnp.sum(2.0 * s1 / s2 * x * dx)
        low = F < 1.0
        lo, hi = jnp.where(low, y, lo), jnp.where(low, hi, y)
        step = y - jnp.log(jnp.maximum(F, 1e-300)) * F / jnp.where(dF > 0, dF, jnp.inf)
        ok = (step > lo) & (step < hi)
        return jnp.where(ok, step, 0.5 * (lo + hi)), lo, hi

    y, _, _ = jax.lax.fori_loop(0, iters, body, (0.5 * ymax, jnp.zeros((), dt), ymax))
    x, _ = xs(y)
    x = jnp.where(jnp.arange(K) == best, 1.0, x)
    w = x / jnp.sum(x)
    return _solution(w, heteroscedastic_certificate(mu_safe, s2, w, best, others), ties, tied, tol, iters)


def heteroscedastic_pair_cost(mu_i, mu_j, n_i, n_j, var_i, var_j):
    """(mu_i - mu_j)^2 / (2 (var_i / n_i + var_j / n_j)) where mu_i > mu_j, else 0: the Gaussian GLR
    of "mu_i >= mu_j" against "mu_i <= mu_j" with variances var (n_i d_i(mu_i, m) + n_j d_j(mu_j, m)
    at the precision-weighted mean m); 0 where a count is 0."""
    ok = (n_i > 0) & (n_j > 0)
    den = var_i / jnp.where(ok, n_i, 1.0) + var_j / jnp.where(ok, n_j, 1.0)
    cost = 0.5 * (mu_i - mu_j) ** 2 / den
    return jnp.where(ok & (mu_i > mu_j), cost, 0.0)


def heteroscedastic_certificate(mu, s2, w, best, others):
    """(L, U) of :func:`certificate` for Gaussian arms of variances ``s2``: L <= T*^-1 <= U."""
    wb, mb, sb = w[best], mu[best], s2[best]
    pb, pa = wb / sb, w / s2
    tot = pb + pa
    m = (pb * mb + pa * mu) / jnp.where(tot > 0, tot, 1.0)
    cost = 0.5 * (mb - mu) ** 2 / (sb / jnp.maximum(wb, 1e-300) + s2 / jnp.maximum(w, 1e-300))
    L = jnp.min(jnp.where(others, cost, jnp.inf))
    d_b = 0.5 * (mb - m) ** 2 / sb
    d_a = 0.5 * (mu - m) ** 2 / s2
    inv = jnp.where(others, 1.0 / jnp.maximum(d_a, 1e-300), 0.0)
    q = inv / jnp.sum(inv)
    U = jnp.maximum(jnp.sum(jnp.where(others, q * d_b, 0.0)), 1.0 / jnp.sum(inv))
    return L, U


def characteristic_time(mu, family: str = "bernoulli", *, sigma=1.0, outer: int = 12,
                        inner: int = 8) -> jax.Array:
    """T*(mu) of Garivier & Kaufmann 2016, Theorem 1 (:func:`optimal_weights`), for one mean
    vector [K] or a batch [..., K]; Gaussian arms with per-arm standard deviations (``sigma`` of
    the means' shape): T*(mu, sigma^2) (:func:`heteroscedastic_weights`)."""
    mu = jnp.asarray(mu)
    if family == "gaussian" and jnp.ndim(sigma) >= 1:  # per-arm standard deviations [..., K]
        fn = lambda m, s: heteroscedastic_weights(m, s).value  # noqa: E731
        for _ in range(mu.ndim - 1):
            fn = jax.vmap(fn)
        return fn(mu, jnp.broadcast_to(jnp.asarray(sigma, mu.dtype), mu.shape))
    fn = lambda m: optimal_weights(m, family, sigma=sigma, outer=outer, inner=inner).value  # noqa: E731
    for _ in range(mu.ndim - 1):
        fn = jax.vmap(fn)
    return fn(mu)


def lower_bound(mu, delta, family: str = "bernoulli", *, sigma=1.0) -> jax.Array:
    """T*(mu) kl(delta, 1 - delta): Garivier & Kaufmann 2016, Theorem 1, the lower bound on
    E[tau_delta] of every delta-correct algorithm (per-arm Gaussian ``sigma``: T*(mu, sigma^2)
    kl(delta, 1 - delta), the bound with known variances, below which no algorithm that does not
    know them can go either)."""
    from jaxbandits.stats import kl_bernoulli as kl

    return characteristic_time(mu, family, sigma=sigma) * kl(delta, 1.0 - delta)


def shifted_means(mu, epsilon, mask=None):
    """mu' with mu'_{i*} = mu* and mu'_a = mu_a - epsilon for a != i* (i* the first best arm): the
    instance whose T* is the epsilon-characteristic time of :func:`epsilon_characteristic_time`."""
    mu = jnp.asarray(mu)
    real = jnp.ones(mu.shape[-1:], bool) if mask is None else jnp.asarray(mask, bool)
    best = jnp.argmax(jnp.where(real, mu, -jnp.inf))
    return jnp.where(jnp.arange(mu.shape[-1]) == best, mu, mu - epsilon)


def epsilon_optimal_weights(mu, epsilon, *, sigma=1.0, mask=None, outer: int = 12,
                            inner: int = 8) -> DesignSolution:
    """w*_eps(mu) and T_eps(mu) of Gaussian arms with known variance sigma^2 and additive slack
    epsilon >= 0 (epsilon-best-arm identification: an answer a is correct when mu_a >= mu* - eps):

        T_eps(mu)^-1 = max_w min_{a != i*} (mu* - mu_a + eps)^2 / (2 sigma^2 (1 / w_{i*} + 1 / w_a)),

    the max over the correct answers being attained at i* in this Gaussian, additive case (Garivier
    & Kaufmann, "Nonasymptotic sequential tests for overlapping hypotheses applied to near-optimal
    arm identification in bandit models", Sequential Analysis 2021; the characteristic time of
    Jourdan, Degenne & Kaufmann, NeurIPS 2023).  It is T* (:func:`optimal_weights`) of
    :func:`shifted_means`; eps = 0 gives T*(mu).  Fields as :func:`optimal_weights`'s."""
    return optimal_weights(shifted_means(mu, epsilon, mask), "gaussian", sigma=sigma, mask=mask, outer=outer,
                           inner=inner)


def epsilon_characteristic_time(mu, epsilon, *, sigma=1.0) -> jax.Array:
    """T_eps(mu) (:func:`epsilon_optimal_weights`), for one mean vector [K] or a batch [..., K]."""
    mu = jnp.asarray(mu)
    fn = lambda m: epsilon_optimal_weights(m, epsilon, sigma=sigma).value  # noqa: E731
    for _ in range(mu.ndim - 1):
        fn = jax.vmap(fn)
    return fn(mu)


def epsilon_lower_bound(mu, delta, epsilon, *, sigma=1.0) -> jax.Array:
    """T_eps(mu) kl(delta, 1 - delta): the lower bound on E[tau_delta] of every algorithm that is
    (epsilon, delta)-correct on Gaussian arms (:func:`epsilon_optimal_weights`)."""
    from jaxbandits.stats import kl_bernoulli as kl

    return epsilon_characteristic_time(mu, epsilon, sigma=sigma) * kl(delta, 1.0 - delta)


def epsilon_projection(w, eps, iters: int = 64):
    """The L-infinity projection of w onto Sigma_K^eps = {v in the simplex : v_a >= eps}:
    v_a = max(w_a - h, eps) with h >= 0 such that sum_a v_a = 1 (found by ``iters`` bisection
    steps), the projection of C-tracking (Garivier & Kaufmann 2016, Sec 3.1, w^{eps_t}).  Needs
    K eps <= 1.  (Any v in Sigma^eps within r of w has v_a >= max(eps, w_a - r), so sum_a max(eps,
    w_a - r) <= 1 forces r >= h, and r >= eps - min_a w_a; v attains both.)"""
    def body(_, bounds):
        lo, hi = bounds
        h = 0.5 * (lo + hi)
        over = jnp.sum(jnp.maximum(w - h, eps)) > 1.0
        return jnp.where(over, h, lo), jnp.where(over, hi, h)

    lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.zeros((), w.dtype), jnp.ones((), w.dtype)))
    v = jnp.maximum(w - hi, eps)
    return v / jnp.sum(v)


def c_tracking_eps(t, K):
    """eps_t = (K^2 + t)^(-1/2) / 2: the forced-exploration level of C-tracking (Garivier &
    Kaufmann 2016, Sec 3.1)."""
    return 0.5 / jnp.sqrt(K * K + jnp.asarray(t, jnp.result_type(float)))


__all__ = ["FAMILIES", "kl_gaussian", "kl_bernoulli", "divergence", "pair_cost", "optimal_weights",
           "heteroscedastic_weights", "heteroscedastic_pair_cost", "heteroscedastic_certificate",
           "characteristic_time", "lower_bound", "certificate", "epsilon_projection", "c_tracking_eps",
           "shifted_means", "epsilon_optimal_weights", "epsilon_characteristic_time", "epsilon_lower_bound"]

# compiled once per shape and options (the trip counts, the family), and float64 inside, whatever the
# caller's x64 setting (jaxbandits.precision)
optimal_weights = jax.jit(optimal_weights, static_argnames=("family", "outer", "inner", "tol"))
heteroscedastic_weights = jax.jit(heteroscedastic_weights, static_argnames=("iters", "tol"))

from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), ["optimal_weights", "heteroscedastic_weights", "characteristic_time", "lower_bound",
                  "epsilon_optimal_weights", "epsilon_characteristic_time", "epsilon_lower_bound"])
