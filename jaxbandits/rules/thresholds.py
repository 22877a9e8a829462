"""Stopping thresholds: every threshold the library's algorithms use, each written once, with its
paper and equation, and one registry of their names (:data:`RULES`).

Units.  The GLR rules compare a unit-variance statistic Z(t) with beta(t, delta): a function here
returns beta in units of sigma^2 (the caller multiplies by sigma^2) unless it takes ``sigma``
itself (:func:`prop2`, :func:`abbasi_yadkori`).  The index algorithms (LinGapE / GIFA family) use a
dimensionless confidence width C_{t,delta} = sqrt(2 beta) (+ a tail for the bounds with a
regulariser); the ``*_width`` functions return it.

Each function keeps the floating-point operations of the code it replaced, in the same order, so
that every replication of every algorithm is bit for bit what it was.

The names (:data:`RULES`), one per rule:

====================  ===============================================================================
``log_t``             log((t + 1) / delta): Tirinzoni & Degenne, NeurIPS 2022, released code
                      (``thresholds.jl``, ``HeuristicThreshold``), the threshold of all their
                      stopping and elimination tests; not proven delta-correct.
``log_log_t``         log((1 + log t) / delta): Garivier & Kaufmann, COLT 2016, Sec 6 (recommended
                      for the experiments), as used by Degenne et al. 2020 (LinGame, Sec 6), Reda et
                      al. 2021 (GIFA, Sec 5), Wang et al. 2021 (FWS, ``GK16``) and Jourdan et al.
                      2022 (Top Two); not proven delta-correct.
``prop2``             (1 + u) sigma^2 log(det((u c)^{-1} A_t + I)^{1/2} / delta_t): Jedra &
                      Proutiere, NeurIPS 2020 (seed 000), Prop 2 / eq. (9), with delta_t = delta or
                      the union over rounds 6 delta / (pi^2 t^2) (Sec 5, :func:`anytime_delta`);
                      with u = 1 the sphere's beta = 2 sigma^2 zeta_t (Sec 4.2, Prop 3).
``abbasi_yadkori``    (sqrt(log(1/delta) + 1/2 log det(A_t / lambda + I)) + sqrt(lambda / 2) S /
                      sigma)^2: Abbasi-Yadkori et al., NeurIPS 2011, Thm 2 (self-normalised bound);
                      LinGame's theoretical threshold (Degenne et al. 2020, Sec 3), GIFA's
                      ``"determinant"`` width (Xu et al. 2018).
``reda_eq2``          C = sqrt(2 log(1/delta) + N log(1 + (t + 1) L^2 / (lambda^2 N))) + tail: Reda
                      et al., AISTATS 2021 (seed 003), eq. (2).
``log_t2``            log(t^2 / delta) = log(1/delta) + 2 log t at round index t: Tirinzoni &
                      Degenne 2022's released code, LinGapE's threshold.
``lucb1``             log(5 K t^4 / (4 delta)): Kalyanakrishnan et al., ICML 2012, LUCB1 (the
                      released code's ``LUCB1Beta``).
``jdk23_calibrated``  per pair (b, a): (N_b r(N_b) + N_a r(N_a)) / 2 (EV-GLR) or (N_b log(1 +
                      r(N_b)) + N_a log(1 + r(N_a))) / 2 (GLR with unknown variances), r(n) a ratio of
                      Lambert W-bar functions (:func:`uv_ratio`): Jourdan, Degenne & Kaufmann, ALT
                      2023, as the C port of the authors' Julia code writes them (jvc56/MAGPIE,
                      ``src/impl/bai_helper.c``, ``HT``); ``threshold="calibrated"`` of the
                      K-armed algorithms with empirical variances.
``kaufmann_koolen``   2 C_G(log((K - 1) / delta) / 2) + 4 log(4 + log(t / 2)), C_G(x) = min over
                      lambda in (1/2, 1] of (g_G(lambda) + x) / lambda: Kaufmann & Koolen, JMLR
                      2021 (Corollary 10, Definition 3), the GLR threshold of Gaussian arms of
                      Jourdan & Degenne 2022 (TTUCB) as Jang, Komiyama & Yamazaki, NeurIPS 2024,
                      App. F.1 state it (:func:`kaufmann_koolen`).
====================  ===============================================================================

The algorithms accept the names their papers' code used (:data:`ALIASES`); each resolves to one
rule above.  ``"theoretical"`` names a different rule in LinGame (``abbasi_yadkori``) and in GIFA
(``reda_eq2``); ``"lts"`` (FWS, Top Two, Fixed Weights) and ``"prop2"`` (LT&S) name the same rule,
eq. (9), with the constants of each algorithm (FWS / Top Two: u = 1, c = max_a ||a||^2 and the
union over rounds; LT&S: its ``u``, ``anytime`` and c = c_{A0} sqrt(d)).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp


# -- ingredients --------------------------------------------------------------------------------------
#: the largest d for which :func:`log_det_ratio` eliminates in unrolled scalar arithmetic (the bound
#: of ``jaxbandits.design.core.SMALL_DIM``, which this module, importing nothing from the library,
#: restates; a test checks that they agree)
UNROLLED_MAX_DIM = 8


def _log_det_unrolled(M: jax.Array) -> jax.Array:
    """log det M of a symmetric positive-definite [d, d] M: the sum of the logarithms of the pivots
    of Gaussian elimination without pivoting, unrolled into scalar expressions (elementwise under
    ``vmap``: no LU factorisation, a solver library call of its own on a GPU)."""
    d = M.shape[0]
    a = [[M[i, j] for j in range(d)] for i in range(d)]
    total = jnp.log(a[0][0])
    for k in range(d - 1):
        for i in range(k + 1, d):
            f = a[i][k] / a[k][k]
            for j in range(k + 1, d):
                a[i][j] = a[i][j] - f * a[k][j]
        total = total + jnp.log(a[k + 1][k + 1])
    return total


def log_det_ratio(gram: jax.Array, scale: float | jax.Array) -> jax.Array:
    """log det(gram / scale + I) (for d <= :data:`UNROLLED_MAX_DIM` by unrolled elimination: the
    matrix is symmetric with eigenvalues >= 1)."""
    d = gram.shape[0]
    if d <= UNROLLED_MAX_DIM:
        return _log_det_unrolled(gram / scale + jnp.eye(d, dtype=gram.dtype))
    return jnp.linalg.slogdet(gram / scale + jnp.eye(d, dtype=gram.dtype))[1]


def anytime_delta(delta: float | jax.Array, t: jax.Array) -> jax.Array:
    """delta_t = 6 delta / (pi^2 t^2): the union bound over rounds of Jedra & Proutiere 2020, Sec 5."""
    t = jnp.maximum(t, 1.0)
    return 6.0 * delta / (math.pi**2 * t**2)


# -- the rules ----------------------------------------------------------------------------------------
def log_t(t, delta):
    """beta = log((t + 1) / delta), t the number of samples so far (Tirinzoni & Degenne 2022,
    ``thresholds.jl``); units of sigma^2."""
    return jnp.log((jnp.asarray(t) + 1.0) / delta)


def log_log_t(t, delta):
    """beta = log((1 + log t) / delta) (Garivier & Kaufmann 2016, Sec 6); units of sigma^2.  The
    caller keeps t >= 1."""
    return jnp.log((1.0 + jnp.log(t)) / delta)


def prop2(gram: jax.Array, delta: float | jax.Array, sigma: float | jax.Array,
          c: float | jax.Array, u: float = 1.0) -> jax.Array:
    """beta(delta, t) of Jedra & Proutiere 2020 (seed 000), Prop 2 / eq. (9):

    beta(delta, t) = (1 + u) sigma^2 log( det((u c)^{-1} A_t + I)^{1/2} / delta ).

    With c = max_a ||a||^2 and u = 1 (Remark 1) it is at most 2 sigma^2 log((t + 1)^{d/2} / delta).
    ``delta`` is delta itself or :func:`anytime_delta` (Sec 5)."""
    return (1.0 + u) * sigma**2 * prop2_log(gram, delta, u * c)


def prop2_log(gram: jax.Array, delta, scale) -> jax.Array:
    """zeta = log(det(A_t / scale + I)^{1/2} / delta): the logarithm of eq. (9) (Jedra & Proutiere
    2020, Prop 2), beta = (1 + u) sigma^2 zeta with scale = u c; the sphere's zeta_t of Prop 3 (u = 1,
    delta_t of :func:`anytime_delta`)."""
    return 0.5 * log_det_ratio(gram, scale) - jnp.log(delta)


def prop2_log_spectrum(eigenvalues: jax.Array, delta, scale) -> jax.Array:
    """:func:`prop2_log` from the eigenvalues of A_t: 1/2 sum_i log(1 + lambda_i / scale) - log delta
    (elementwise: no determinant of a matrix)."""
    return 0.5 * jnp.sum(jnp.log1p(eigenvalues / scale), axis=-1) - jnp.log(delta)


def prop2_small(gram, delta, sigma, c, u):
    """:func:`prop2` with the determinant in closed form for d = 2 (elementwise, fuses under
    ``vmap``); the same rule."""
    if gram.shape[0] == 2:
        s = u * c
        a, b, e = gram[0, 0] / s + 1.0, 0.5 * (gram[0, 1] + gram[1, 0]) / s, gram[1, 1] / s + 1.0
        return (1.0 + u) * sigma**2 * (0.5 * jnp.log(a * e - b * b) - jnp.log(delta))
    return prop2(gram, delta, sigma, c, u)


def abbasi_yadkori(gram: jax.Array, delta, reg, S, sigma) -> jax.Array:
    """beta = (sqrt(log(1/delta) + 1/2 log det(A_t / lambda + I)) + sqrt(lambda / 2) S / sigma)^2
    (Abbasi-Yadkori et al. 2011, Thm 2, in units of sigma^2), lambda = ``reg``, S a bound on
    ||theta||.  ``gram``: A_t without the regulariser."""
    root = jnp.sqrt(-jnp.log(delta) + 0.5 * log_det_ratio(gram, reg))
    return (root + jnp.sqrt(reg / 2.0) * S / sigma) ** 2


def lucb1(t, delta, K):
    """beta = log(5 K t^4 / (4 delta)) of LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone, ICML 2012,
    Sec 3: the exploration rate beta(u, t) = sqrt(ln(k1 K t^4 / delta) / (2u)) with k1 = 5/4, for
    rewards in [0, 1]), K arms, t the round index; units of sigma^2 (Hoeffding: sigma = 1/2 gives
    the paper's width).  The same constant is in Reda et al.'s released code (``LUCB1Beta``)."""
    return jnp.log(5.0 * K * t**4 / (4.0 * delta))


def log_t2(t, delta):
    """beta = log(1/delta) + 2 log t, t the round index (Tirinzoni & Degenne 2022's released code,
    LinGapE); units of sigma^2."""
    return jnp.log(1.0 / delta) + 2.0 * jnp.log(t)


# -- the same rules as confidence widths C = sqrt(2 beta) (+ tail) ------------------------------------
def abbasi_yadkori_width(logdet, delta, tail):
    """C = sqrt(2 log(1/delta) + log det(V_t / lambda)) + tail: :func:`abbasi_yadkori` as a width
    (sqrt(2 beta), divided by sigma; Xu et al. 2018), ``logdet`` = ln det V_t - N ln lambda,
    ``tail`` = sqrt(lambda) S / sigma (Thm 2) or GIFA's released-code lambda S / sigma."""
    return jnp.sqrt(2.0 * jnp.log(1.0 / delta) + logdet) + tail


def reda_eq2_width(t, delta, N, L2, lam, tail):
    """C = sqrt(2 log(1/delta) + N log(1 + (t + 1) L^2 / (lambda^2 N))) + tail: Reda et al. 2021
    (seed 003), eq. (2), t samples so far, N the dimension, L^2 = max_a ||a||^2."""
    return jnp.sqrt(2.0 * jnp.log(1.0 / delta) + N * jnp.log(1.0 + (t + 1.0) * L2 / (lam**2 * N))) + tail


def width(beta):
    """C = sqrt(2 beta): the width of a threshold beta (units of sigma^2)."""
    return jnp.sqrt(2.0 * beta)


# -- the registry -------------------------------------------------------------------------------------
class Rule(NamedTuple):
    """One threshold: its formula, its source, and the functions above that compute it."""
    formula: str
    paper: str
    functions: tuple


RULES: dict[str, Rule] = {
    "log_t": Rule("log((t + 1) / delta)", "Tirinzoni & Degenne 2022, thresholds.jl (HeuristicThreshold)",
                  (log_t,)),
    "log_log_t": Rule("log((1 + log t) / delta)", "Garivier & Kaufmann 2016, Sec 6", (log_log_t,)),
    "prop2": Rule("(1 + u) sigma^2 log(det((u c)^-1 A_t + I)^(1/2) / delta_t)",
                  "Jedra & Proutiere 2020, Prop 2 / eq. (9); delta_t of Sec 5",
                  (prop2, prop2_small, prop2_log)),
    "abbasi_yadkori": Rule("(sqrt(log(1/delta) + log det(A_t / lambda + I) / 2) + sqrt(lambda / 2) S / sigma)^2",
                           "Abbasi-Yadkori et al. 2011, Thm 2", (abbasi_yadkori, abbasi_yadkori_width)),
    "reda_eq2": Rule("sqrt(2 log(1/delta) + N log(1 + (t + 1) L^2 / (lambda^2 N))) + tail (a width)",
                     "Reda et al. 2021, eq. (2)", (reda_eq2_width,)),
    "log_t2": Rule("log(1/delta) + 2 log t", "Tirinzoni & Degenne 2022, released code (LinGapE)", (log_t2,)),
    "lucb1": Rule("log(5 K t^4 / (4 delta))", "Kalyanakrishnan et al. 2012 (LUCB1)", (lucb1,)),
}

#: the names each algorithm family accepts for ``threshold=`` (its papers' names), in the order
#: its error message lists them -> the rule of :data:`RULES` each one is
ALIASES: dict[str, dict[str, str]] = {
    # FWS, Top Two, Fixed Weights (:mod:`jaxbandits.algorithms.glr`)
    "glr": {"heuristic": "log_log_t", "lts": "prop2", "log_t": "log_t"},
    # LazyTrackAndStop
    "track_and_stop": {"prop2": "prop2", "log_t": "log_t"},
    # LinGame / MisLid
    "lingame": {"heuristic": "log_log_t", "theoretical": "abbasi_yadkori", "log_t": "log_t"},
    # GIFA, LinGapE, LinGIFA, m-LinGapE, LUCB, UGapE
    "gifa": {"theoretical": "reda_eq2", "heuristic": "log_log_t", "lucb1": "lucb1",
             "determinant": "abbasi_yadkori", "td_lingape": "log_t2", "log_t": "log_t"},
}


def names(family: str) -> tuple[str, ...]:
    """The ``threshold=`` values an algorithm family accepts (:data:`ALIASES`)."""
    return tuple(ALIASES[family])


def resolve(family: str, name: str) -> str:
    """The rule (a key of :data:`RULES`) that ``threshold=name`` selects in ``family``; a clear
    error naming the argument, its value and the allowed values otherwise."""
    accepted = ALIASES[family]
    if not isinstance(name, str) or name not in accepted:
        raise ValueError(f"threshold must be one of {tuple(accepted)}, got {name!r}")
    return accepted[name]


# -- K-armed exponential families (Chernoff's GLR stopping rule) ------------------------------------
def chernoff_bernoulli(t, delta, K):
    """beta = log(2 t (K - 1) / delta): the threshold with which Chernoff's stopping rule is
    delta-correct for Bernoulli arms under any sampling rule (Garivier & Kaufmann, COLT 2016,
    Sec 4, the Bernoulli case of their delta-PAC result); in KL units, t samples so far."""
    return jnp.log(2.0 * t * (K - 1.0) / delta)


RULES["chernoff_bernoulli"] = Rule("log(2 t (K - 1) / delta)",
                                   "Garivier & Kaufmann 2016, Sec 4 (Bernoulli arms, any sampling rule)",
                                   (chernoff_bernoulli,))
#: K-armed exponential families (:class:`jaxbandits.rules.karmed.ChernoffGLR`)
ALIASES["karmed"] = {"heuristic": "log_log_t", "gk16": "chernoff_bernoulli", "log_t": "log_t",
                     "kaufmann_koolen": "kaufmann_koolen"}
#: LUCB1 (:class:`jaxbandits.rules.karmed.LUCB1`): the paper's rate at the round index, or GK16's
ALIASES["lucb1"] = {"lucb1": "lucb1", "heuristic": "log_log_t"}


def even_dar_width(t, delta, K, c=4.0, sigma=0.5):
    """alpha_t = 2 sigma sqrt(log(c K t^2 / delta) / t): the confidence width of Successive
    Elimination after t rounds (Even-Dar, Mannor & Mansour, JMLR 2006, Algorithm 3, c = 4; their
    sqrt(log(c n t^2 / delta) / t) for rewards in [0, 1] is sigma = 1/2)."""
    return 2.0 * sigma * jnp.sqrt(jnp.log(c * K * t * t / delta) / t)


RULES["even_dar"] = Rule("2 sigma sqrt(log(c K t^2 / delta) / t) (a width)",
                         "Even-Dar, Mannor & Mansour 2006, Algorithm 3", (even_dar_width,))
#: Successive Elimination (:class:`jaxbandits.algorithms.SuccessiveElimination`)
ALIASES["successive_elimination"] = {"even_dar": "even_dar"}

#: Gaussian arms with unknown (or known per-arm) variances
#: (:class:`jaxbandits.rules.karmed.GaussianGLR`, :class:`jaxbandits.rules.karmed.UnknownVarianceGLR`):
#: GK16's heuristic log((1 + log t) / delta), log((t + 1) / delta), or (with empirical variances
#: only) the calibrated per-pair thresholds of Jourdan, Degenne & Kaufmann (ALT 2023)
#: (:func:`uv_pair_threshold`)
ALIASES["unknown_variance"] = {"heuristic": "log_log_t", "log_t": "log_t", "calibrated": "jdk23_calibrated"}


# -- Lambert W (both real branches), jittable ----------------------------------------------------------
#: Halley steps of :func:`lambert_w` (fixed: no data-dependent loop); from its initial guesses four
#: reach float64 round-off on both branches, the fifth and sixth are margin
LAMBERT_W_STEPS = 6


def lambert_w(x, branch: int = 0, steps: int = LAMBERT_W_STEPS):
    """The real branches of the Lambert W function, the solutions w of w e^w = x: ``branch=0``,
    W_0(x) >= -1 for x >= -1/e, and ``branch=-1``, W_{-1}(x) <= -1 for -1/e <= x < 0 (NaN outside
    the domain; W_{-1}(0) = -inf).  Elementwise, jittable and vmappable: an initial guess (the
    branch-point series w = -1 + p - p^2/3 + 11 p^3/72, p = +-sqrt(2 (e x + 1)), near x = -1/e
    (Corless et al., "On the Lambert W function", Adv. Comput. Math. 1996, eq. 4.22); Winitzki's
    log(1 + x) (1 - log(1 + log(1 + x)) / (2 + log(1 + x))) on W_0 elsewhere; the asymptotic
    L1 - L2 + L2 / L1, L1 = log(-x), L2 = log(-L1), on W_{-1} (Corless et al. eq. 4.19)), then
    ``steps`` Halley steps on f(w) = w - x e^{-w} (the equation divided by e^w, so that no step
    overflows).  Float64 agrees with ``scipy.special.lambertw`` to ~1e-15 relative away from the
    branch point (tests/test_lambert_thresholds.py); within 1e-8 of -1/e the function's own
    conditioning (dW/dx ~ 1/sqrt(2 e (x + 1/e))) limits every implementation."""
    if branch not in (0, -1):
        raise ValueError(f"branch must be 0 or -1, got {branch!r}")
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    e = math.e
    q = jnp.maximum(2.0 * (e * x + 1.0), 0.0)
    p = jnp.sqrt(q) if branch == 0 else -jnp.sqrt(q)
    near = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    if branch == 0:
        l1 = jnp.log1p(jnp.maximum(x, -0.25))
        far = l1 * (1.0 - jnp.log1p(l1) / (2.0 + l1))
        big = jnp.log(jnp.maximum(x, 3.0))
        far = jnp.where(x > 3.0, big - jnp.log(big) + jnp.log(big) / big, far)
        w = jnp.where(x < -0.25, near, far)
    else:
        xs = jnp.minimum(x, -1e-300)
        L1 = jnp.log(-xs)
        L2 = jnp.log(-L1)
        far = L1 - L2 + L2 / L1
        w = jnp.where(x < -0.25, near, far)

    def halley(_, w):
        f = w - x * jnp.exp(-w)               # (w e^w - x) e^{-w}
        wp1 = w + 1.0
        den = wp1 - (w + 2.0) * f / (2.0 * jnp.where(wp1 == 0, 1.0, wp1))
        step = f / jnp.where(den == 0, 1.0, den)
        return jnp.where((wp1 == 0) | (den == 0), w, w - step)

    w = jax.lax.fori_loop(0, int(steps), halley, w)
    lo = -1.0 / e
    w = jnp.where(x == lo, -1.0, w)
    bad = (x < lo) if branch == 0 else ((x < lo) | (x > 0))
    if branch == -1:
        w = jnp.where(x == 0, -jnp.inf, w)
    return jnp.where(bad, jnp.nan, w)


def lambert_w_bar(x, branch: int = 0, steps: int = LAMBERT_W_STEPS):
    """W-bar_k(x) = -W_k(-e^{-x}) for x >= 1: the solutions z of z - log z = x, z in (0, 1] on
    ``branch=0`` and z >= 1 on ``branch=-1`` (the notation of Jourdan, Degenne & Kaufmann, "Dealing
    with unknown variances in best-arm identification", ALT 2023, as the C port of their code
    writes it: jvc56/MAGPIE, ``src/impl/bai_helper.c``, ``barW(x, k) = -lambertw(-exp(-x), k)``).
    W-bar_{-1}(x) ~ x + log x."""
    return -lambert_w(-jnp.exp(-jnp.asarray(x)), branch, steps)


# -- the calibrated thresholds of Gaussian arms with unknown variances -------------------------------
#: s of the calibrated thresholds (the C port of the authors' code creates them with s = 2)
UV_S = 2


def _uv_constants(delta, K, s=UV_S):
    """(log(4 (K - 1) zeta(s) / delta), eta = 1 / log(1 / delta)); s = 2: zeta(2) = pi^2 / 6."""
    if s != 2:
        raise ValueError(f"s must be 2 (zeta(2) = pi^2 / 6), got {s!r}")
    return jnp.log(4.0 * (K - 1.0) * (math.pi**2 / 6.0) / delta), 1.0 / jnp.log(1.0 / delta)


def uv_valid_count(n, delta, K, s=UV_S):
    """Whether n samples of an arm are past the first time from which the calibrated thresholds of
    :func:`uv_ratio` hold: n > exp(1 + W_0((u - 1) / e)), u = 2 (1 + eta) (log(4 (K - 1) zeta(s) /
    delta) + s log(1 + log n / log(1 + eta))), eta = 1 / log(1 / delta) (``valid_time`` of the C
    port, see :func:`uv_ratio`); exactly the counts where n W-bar_0(1 + u / n) > 1."""
    logc, eta = _uv_constants(delta, K, s)
    n = jnp.maximum(jnp.asarray(n), 1.0)
    u = 2.0 * (1.0 + eta) * (logc + s * jnp.log1p(jnp.log(n) / jnp.log1p(eta)))
    return n > jnp.exp(1.0 + lambert_w((u - 1.0) / math.e, 0))


def uv_ratio(n, delta, K, s=UV_S):
    """r(n) = W-bar_{-1}(1 + 2 log(4 (K - 1) zeta(s) / delta) + 2 s log(1 + log n / (2 s)) + 2 s)
    / (n W-bar_0(1 + 2 (1 + eta) (log(4 (K - 1) zeta(s) / delta) + s log(1 + log n / log(1 + eta))) / n) - 1),
    eta = 1 / log(1 / delta), W-bar_k(x) = -W_k(-e^{-x}) (:func:`lambert_w_bar`): the per-arm factor
    of the calibrated stopping thresholds of Jourdan, Degenne & Kaufmann, "Dealing with unknown
    variances in best-arm identification", ALT 2023 (arXiv:2210.00974), as the C port of the
    authors' Julia code writes them (jvc56/MAGPIE, ``src/impl/bai_helper.c`` at commit c7f796c2,
    ``get_factor_non_KL`` of the ``HT`` threshold, created with s = 2; the paper's own equation
    was not read).  Meaningful where :func:`uv_valid_count` holds (positive denominator)."""
    logc, eta = _uv_constants(delta, K, s)
    n = jnp.maximum(jnp.asarray(n), 1.0)
    ln = jnp.log(n)
    val_s2 = 1.0 + 2.0 * (1.0 + eta) * (logc + s * jnp.log1p(ln / jnp.log1p(eta))) / n
    val_mu = 1.0 + 2.0 * logc + 2.0 * s * jnp.log1p(ln / (2.0 * s)) + 2.0 * s
    return lambert_w_bar(val_mu, -1) / (n * lambert_w_bar(val_s2, 0) - 1.0)


def uv_pair_threshold(n_b, n_a, delta, K, statistic: str, s=UV_S):
    """c(N_b, N_a, delta) of the pair (b, a), with the factor r of :func:`uv_ratio`:

    * ``statistic="ev_glr"`` (the EV-GLR): (N_b r(N_b) + N_a r(N_a)) / 2;
    * ``statistic="glr"`` (the GLR with unknown variances): (N_b log(1 + r(N_b)) + N_a log(1 + r(N_a))) / 2

    (``HT_threshold`` of the C port, jvc56/MAGPIE ``src/impl/bai_helper.c`` at commit c7f796c2,
    with ``is_EV_GLR`` true / false).  In KL units (the statistic's); the caller makes it +inf
    before :func:`uv_valid_count` holds for every arm."""
    rb, ra = uv_ratio(n_b, delta, K, s), uv_ratio(n_a, delta, K, s)
    if statistic == "ev_glr":
        return 0.5 * (n_b * rb + n_a * ra)
    if statistic == "glr":
        return 0.5 * (n_b * jnp.log1p(rb) + n_a * jnp.log1p(ra))
    raise ValueError(f"statistic must be 'ev_glr' or 'glr', got {statistic!r}")


RULES["jdk23_calibrated"] = Rule(
    "(N_b r(N_b) + N_a r(N_a)) / 2 (EV-GLR) or (N_b log(1 + r(N_b)) + N_a log(1 + r(N_a))) / 2 (GLR), per pair; "
    "r(n) = W-bar_{-1}(1 + 2 log(4 (K - 1) zeta(2) / delta) + 4 log(1 + log n / 4) + 4) / "
    "(n W-bar_0(1 + 2 (1 + eta) (log(4 (K - 1) zeta(2) / delta) + 2 log(1 + log n / log(1 + eta))) / n) - 1)",
    "Jourdan, Degenne & Kaufmann 2023 (ALT), as the C port of the authors' code writes it "
    "(jvc56/MAGPIE, src/impl/bai_helper.c, HT)",
    (lambert_w, lambert_w_bar, uv_valid_count, uv_ratio, uv_pair_threshold))


# -- Kaufmann & Koolen's calibration of Gaussian deviations --------------------------------------------
#: grid points and golden-section steps of :func:`calibration_gaussian` (fixed: no data-dependent loop)
CG_GRID, CG_GOLDEN = 48, 40


def g_gaussian(lam):
    """g_G(lambda) = 2 lambda - 2 lambda log(4 lambda) + log zeta(2 lambda) - log(1 - lambda) / 2 on
    lambda in (1/2, 1) (Kaufmann & Koolen, "Mixture martingales revisited with applications to
    sequential tests and confidence intervals", JMLR 2021, Corollary 10, the Gaussian case), zeta
    the Riemann zeta function (``jax.scipy.special.zeta(s, 1)``)."""
    from jax.scipy.special import zeta

    lam = jnp.asarray(lam)
    return (2.0 * lam - 2.0 * lam * jnp.log(4.0 * lam) + jnp.log(zeta(2.0 * lam, jnp.ones_like(lam)))
            - 0.5 * jnp.log1p(-lam))


def calibration_gaussian(x, grid: int = CG_GRID, golden: int = CG_GOLDEN):
    """C_G(x) = min_{lambda in (1/2, 1]} (g_G(lambda) + x) / lambda (Kaufmann & Koolen 2021,
    Definition 3 with g_G of :func:`g_gaussian`); C_G(x) ~ x + log x.  The objective tends to +inf
    at both ends (log zeta(2 lambda) as lambda -> 1/2, -log(1 - lambda) / 2 as lambda -> 1): its
    minimum over ``grid`` points of (1/2, 1) brackets it, then ``golden`` golden-section steps in
    the bracket (fixed trip counts, jittable in x: delta may be traced).  Against scipy's bounded
    minimisation to ~1e-12 relative (tests/test_lambert_thresholds.py)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    lo_end, hi_end = 0.5 + 1e-9, 1.0 - 1e-12
    f = lambda lam: (g_gaussian(lam) + x) / lam  # noqa: E731
    pts = jnp.linspace(lo_end, hi_end, grid, dtype=x.dtype)
    vals = jax.vmap(f)(pts)
    i = jnp.argmin(vals, axis=0)
    a = pts[jnp.maximum(i - 1, 0)]
    b = pts[jnp.minimum(i + 1, grid - 1)]
    r = (math.sqrt(5.0) - 1.0) / 2.0

    def step(_, c):
        a, b = c
        p, q = b - r * (b - a), a + r * (b - a)
        left = f(p) < f(q)
        return jnp.where(left, a, p), jnp.where(left, q, b)

    a, b = jax.lax.fori_loop(0, int(golden), step, (a, b))
    return jnp.minimum(jnp.min(vals, axis=0), f(0.5 * (a + b)))


def kaufmann_koolen(t, delta, K):
    """c(t, delta) = 2 C_G(log((K - 1) / delta) / 2) + 4 log(4 + log(t / 2)), t >= 2 the number of
    samples, C_G of :func:`calibration_gaussian`: the threshold with which the GLR stopping rule of
    Gaussian arms (in KL units) is delta-correct under any sampling rule, from Kaufmann & Koolen
    2021's deviation inequality for the sum of two arms' N_a d(mu_hat_a, mu_a) (the union over the
    K - 1 pairs; 2 (log(4 + log N_b) + log(4 + log N_a)) <= 4 log(4 + log(t / 2)) by concavity).
    The form is the one of Jourdan & Degenne 2022 (TTUCB) as Jang, Komiyama & Yamazaki, "Fixed
    confidence best arm identification in the Bayesian setting", NeurIPS 2024, Appendix F.1, state
    it (C_G and c(n, delta) written out), and g_G / C^g match a public implementation that cites
    Kaufmann & Koolen 2021, Corollary 10 and Definition 3; neither Kaufmann & Koolen's nor Jourdan
    et al.'s own text was read.  Jang et al. display the stopping condition as
    (mu_b - mu_a) / sqrt(1/N_b + 1/N_a) >= sqrt(c), i.e. a unit-variance GLR >= c / 2; here the
    GLR itself is compared with c (the deviation inequality's units), the conservative reading.
    Units of sigma^2 (KL units)."""
    t = jnp.maximum(jnp.asarray(t), 2.0)
    return 2.0 * calibration_gaussian(jnp.log((K - 1.0) / delta) / 2.0) + 4.0 * jnp.log(4.0 + jnp.log(t / 2.0))


RULES["kaufmann_koolen"] = Rule(
    "2 C_G(log((K - 1) / delta) / 2) + 4 log(4 + log(t / 2)), C_G(x) = min_{1/2 < lambda <= 1} (g_G(lambda) + x) "
    "/ lambda, g_G(lambda) = 2 lambda - 2 lambda log(4 lambda) + log zeta(2 lambda) - log(1 - lambda) / 2",
    "Kaufmann & Koolen 2021 (JMLR), Corollary 10 / Definition 3; the form of Jourdan & Degenne 2022 (TTUCB) as "
    "Jang, Komiyama & Yamazaki (NeurIPS 2024), Appendix F.1, state it",
    (g_gaussian, calibration_gaussian, kaufmann_koolen))
