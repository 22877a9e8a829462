"""Named generators of every problem instance used in the seed papers.

The seed papers:

* 000: Jedra & Proutiere, "Optimal Best-arm Identification in Linear Bandits", NeurIPS 2020.
* 001: Fiez, Jain, Jamieson, Ratliff, "Sequential Experimental Design for Transductive Linear
  Bandits", NeurIPS 2019 (code: github.com/fiezt/Transductive-Linear-Bandit-Code).
* 002: Azizi, Kveton, Ghavamzadeh, "Fixed-Budget Best-Arm Identification in Structured Bandits",
  IJCAI 2022.
* 003: Reda, Kaufmann, Delahaye-Duriez, "Top-m identification for linear bandits", AISTATS 2021
  (code: github.com/clreda/linear-top-m).

Also Tirinzoni & Degenne, "On elimination strategies for bandit fixed-confidence identification",
NeurIPS 2022: its Table 1 instance, shipped with the package as data
(:func:`tirinzoni_degenne_table1`; ``files/README.md`` lists the data files and their provenance).

Conventions.  Every generator returns an :class:`~jaxbandits.instances.base.Instance`.  Random
generators take the PRNG ``key`` first and static shape arguments (Python ints), use only
``jax.random``/``jnp`` on traced values, and are therefore jit- and vmap-safe::

    insts = jax.vmap(lambda k: many_arms_code(k, 1000))(jax.random.split(key, 20))
    insts = batch(many_arms_code, key, 20, num_arms=1000)   # instance j uses fold_in(key, j)

Deterministic generators take the instance parameters with the papers' defaults.  ``noise`` is
always the standard deviation sigma of the Gaussian reward noise (papers that state a variance
are converted: seed 002 Sec 8.1's N(0, 10) is ``noise = sqrt(10)``).
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.instances.base import Instance, make_instance

__all__ = [
    "batch",
    "soare_benchmark",
    "soare_adaptive_gse",
    "many_arms_paper",
    "many_arms_code",
    "many_arms_corner",
    "unit_sphere",
    "sphere_rage",
    "sphere_gse",
    "sphere_odlinbai",
    "closest_pair",
    "transductive_example",
    "multivariate_testing",
    "factorial_features",
    "static_basis",
    "logistic_gse",
    "topm_classic",
    "topm_hard_top1",
    "topm_random_gaussian",
    "topm_table4_m",
    "TOPM_TABLE4",
    "tirinzoni_degenne_table1",
]


def _float():
    return jnp.result_type(float)


# ------------------------------------------------------------------------------------------------
# batching
# ------------------------------------------------------------------------------------------------
def batch(generator: Callable[..., Instance], key: jax.Array, n: int, **kwargs) -> Instance:
    """A batch of ``n`` instances of a random ``generator``; instance j is
    ``generator(jax.random.fold_in(key, j), **kwargs)``.

    ``kwargs`` are passed unchanged (they are static: shapes, angles, noise).  The result has a
    leading axis of length ``n`` on every leaf, and ``batch(...)[j]`` equals the single instance
    drawn from ``fold_in(key, j)``, whatever ``n`` is (reproducibility independent of batching).
    """
    if n < 1:
        raise ValueError(f"need n >= 1 instances, got {n}")
    keys = _fold_in_range(key, int(n))
    return jax.vmap(lambda k: generator(k, **kwargs))(keys)


@functools.partial(jax.jit, static_argnums=1)
def _fold_in_range(key, n):
    return jax.vmap(lambda j: jax.random.fold_in(key, j))(jnp.arange(n))


def _jit(*static):
    """jit a random generator with its shape/config arguments static (one compilation per
    configuration when called eagerly; inlined when called under the user's jit/vmap)."""
    return functools.partial(jax.jit, static_argnames=static)


# ------------------------------------------------------------------------------------------------
# 1. Soare et al. (2014) benchmark
# ------------------------------------------------------------------------------------------------
def _soare_arms(d: int, omega: float):
    if d < 2:
        raise ValueError(f"the Soare benchmark needs d >= 2, got {d}")
    near = np.zeros((1, d))
    near[0, :2] = math.cos(omega), math.sin(omega)
    return np.concatenate([np.eye(d), near], axis=0)


def soare_benchmark(d: int = 5, *, omega: float = 0.01, theta_scale: float = 2.0,
                    noise: float = 1.0) -> Instance:
    """The linear-bandit benchmark of Soare et al. (2014) as in seed 001 Sec 5 (Fig. 1a).

    X = Z = {e_1, ..., e_d, x'} in R^d with x' = cos(omega) e_1 + sin(omega) e_2 (arm index d),
    theta = theta_scale * e_1, so the best arm is e_1 (index 0) and the hardest competitor is x'
    with gap theta_scale (1 - cos omega) = 2 (1 - cos 0.01) ~ 1.0e-4 by default.  Pulling e_2
    (index 1) is what resolves the direction e_1 - x'.

    Seed 001 defaults: omega = 0.01, theta = 2 e_1, standard normal noise ("unless explicitly
    mentioned, noise ... standard normal", Sec 5), delta = 0.05, 20 repetitions; the released code
    sweeps d in {5, 10, 15, 20, 25, 30, 35} (run_sin_cos_example.py).
    """
    X = _soare_arms(d, omega)
    theta = np.zeros(d)
    theta[0] = theta_scale
    return make_instance(X, theta, noise)


def soare_adaptive_gse(d: int = 7, *, omega: float = 0.1, theta_scale: float = 1.0,
                       noise: float = math.sqrt(10.0)) -> Instance:
    """The adaptive-allocation instance of seed 002 Sec 8.1 (Fig. 2): Soare et al.'s benchmark with
    omega = 1/10, theta = e_1 and noise N(0, 10) (variance 10, so sigma = sqrt(10)).

    K = d + 1 arms (Fig. 2 is drawn for d = K - 1, K up to 32); the gap between e_1 and the
    disturbing arm is 1 - cos(0.1) ~ 5.0e-3.  Fixed budget B; 1000 replications (Sec 8).
    """
    return soare_benchmark(d, omega=omega, theta_scale=theta_scale, noise=noise)


# ------------------------------------------------------------------------------------------------
# 2. many arms with moderate gaps (d = 2)
# ------------------------------------------------------------------------------------------------
def _many_arms(angles: jax.Array, informative: jax.Array, noise) -> Instance:
    rest = jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=-1)
    head = jnp.stack([jnp.array([1.0, 0.0], _float()), informative.astype(_float())])
    X = jnp.concatenate([head, rest.astype(_float())], axis=0)
    return make_instance(X, jnp.array([1.0, 0.0]), noise)


def _check_many(num_arms):
    if num_arms < 3:
        raise ValueError(f"the many-arms instance needs num_arms >= 3, got {num_arms}")


@_jit("num_arms")
def many_arms_paper(key: jax.Array, num_arms: int, *, phi_std: float = 0.3,
                    noise: float = 1.0) -> Instance:
    """The "many arms with moderate gaps" instance as written in seed 001 Sec 5 (Fig. 1b) and
    seed 000 Sec 5 (Table 1).

    d = 2, X = Z = {e_1, x_2 = (cos 3pi/4, sin 3pi/4)} U {(cos(pi/4 + phi_i), sin(pi/4 + phi_i))},
    i = 3..n, theta = e_1; arm 0 is e_1 (best), arm 1 the informative arm x_2.

    Both papers write phi_i ~ N(0, .09).  Read as N(mean, variance) that is a standard deviation of
    0.3, the default here (``phi_std=0.3``).  Beware: with std 0.3 and thousands of arms a few
    angles land near 0, so the smallest gap becomes ~1e-6 instead of the "expected gap ~0.3" the
    paper describes; the released code (``many_arms_code``) draws angles in [0.78, 0.88) instead,
    and that code produced seed 001 Fig. 1b and seed 000 Table 1's RAGE/Oracle rows.  Seed 002
    App. E.3 writes N(0, 0.09^2), i.e. std 0.09: see ``many_arms_corner``.

    Defaults: standard normal reward noise (seed 001 Sec 5; seed 000 does not state sigma),
    delta = 0.05; seed 000 Table 1 uses K in {1000, 2500, 5000, 7500}.
    """
    _check_many(num_arms)
    phi = phi_std * jax.random.normal(key, (num_arms - 2,), _float())
    info = jnp.array([math.cos(3 * math.pi / 4), math.sin(3 * math.pi / 4)])
    return _many_arms(math.pi / 4 + phi, info, noise)


@_jit("num_arms")
def many_arms_code(key: jax.Array, num_arms: int, *, noise: float = 1.0) -> Instance:
    """The many-arms instance as generated by seed 001's released code (run_many_arms.py), which
    produced seed 001 Fig. 1b and the RAGE and Oracle rows of seed 000 Table 1.

    Angles 0.78 + 0.1 U[0, 1) for the n - 2 look-alike arms (gaps 1 - cos(angle) in
    [0.289, 0.364)), the informative arm (-0.707, 0.707) (rounded cos/sin of 3pi/4), theta = e_1.
    Arm order here: e_1 (index 0, best), informative arm (index 1), then the n - 2 random arms
    (the code lists the random arms first; the order does not change the problem).

    Defaults: standard normal noise, delta = 0.05; seed 000 Table 1 uses K in
    {1000, 2500, 5000, 7500}, the code sweeps n in {10000, ..., 30000}.
    """
    _check_many(num_arms)
    angles = 0.78 + 0.1 * jax.random.uniform(key, (num_arms - 2,), _float())
    return _many_arms(angles, jnp.array([-0.707, 0.707]), noise)


def many_arms_corner(key: jax.Array, num_arms: int, *, phi_std: float = 0.09,
                     noise: float = 1.0) -> Instance:
    """The corner-case instance of seed 002 App. E.3 (Fig. 7; Section 5.1 of Yang & Tan 2021).

    d = 2, theta = e_1 = x_1, x_K = (cos 3pi/4, sin 3pi/4), x_i = (cos(pi/4 + phi_i),
    sin(pi/4 + phi_i)) with phi_i ~ N(0, 0.09^2) i.i.d. (standard deviation 0.09, as seed 002
    writes it), sigma^2 = 1.  Arm order here: e_1, the 3pi/4 arm, then the random arms.
    """
    return many_arms_paper(key, num_arms, phi_std=phi_std, noise=noise)


# ------------------------------------------------------------------------------------------------
# 3. uniform on the unit sphere
# ------------------------------------------------------------------------------------------------
def closest_pair(X: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Indices (i, j) of the two closest rows of X [K, d] (Euclidean), i < j (jit/vmap safe).

    Ties are broken towards the smallest index, like the ``argmin`` of seed 001's code.
    """
    sq = jnp.sum(X * X, axis=-1)
    dist = sq[:, None] + sq[None, :] - 2.0 * X @ X.T
    K = X.shape[0]
    dist = jnp.where(jnp.eye(K, dtype=bool), jnp.inf, dist)
    flat = jnp.argmin(dist)
    a, b = flat // K, flat % K
    return jnp.minimum(a, b), jnp.maximum(a, b)


SPHERE_ARMS = ("sphere", "cube")


@_jit("num_arms", "dim", "arms")
def unit_sphere(key: jax.Array, num_arms: int, dim: int, *, alpha: float = 0.0,
                noise: float = 1.0, arms: str = "sphere") -> Instance:
    """Arms i.i.d. uniform on the unit sphere of R^dim; theta = x_i + alpha (x_j - x_i) where
    (x_i, x_j) are the two closest arms (x_i the one of smaller index).

    ``arms="cube"``: arms uniform on [-1, 1]^dim, then normalised (on the sphere, but not
    uniformly: denser towards the cube's diagonals), as seed 002's released code draws them
    (its ``_synt_data``, synt 6); the text says "sampled from the unit sphere", the default.

    For 0 <= alpha < 1/2, x_i is the best arm and x_j the second best, with gap
    (1 - 2 alpha)(1 - x_i^T x_j) = (1 - 2 alpha) ||x_i - x_j||^2 / 2 (no third arm can beat x_j,
    since (x_i, x_j) is the closest pair).  X = Z.
    """
    if num_arms < 2:
        raise ValueError(f"need num_arms >= 2, got {num_arms}")
    if arms not in SPHERE_ARMS:
        raise ValueError(f"arms must be one of {SPHERE_ARMS}, got {arms!r}")
    if arms == "sphere":
        g = jax.random.normal(key, (num_arms, dim), _float())
    else:
        g = jax.random.uniform(key, (num_arms, dim), _float(), -1.0, 1.0)
    X = g / jnp.linalg.norm(g, axis=-1, keepdims=True)
    i, j = closest_pair(X)
    theta = X[i] + alpha * (X[j] - X[i])
    return make_instance(X, theta, noise)


def sphere_rage(key: jax.Array, num_arms: int, *, dim: int = 9, noise: float = 1.0) -> Instance:
    """Seed 001 Sec 5 "uniform distribution on a sphere" (Fig. 1c): d = 9, theta = x where (x, x')
    are the two closest arms (alpha = 0 in the released code run_uniform.py), standard normal
    noise, delta = 0.05; the code sweeps K in {250, 500, 1000, 1500, 2000}, 20 instances each.
    """
    return unit_sphere(key, num_arms, dim, alpha=0.0, noise=noise)


def sphere_gse(key: jax.Array, num_arms: int, *, dim: int = 10,
               noise: float = math.sqrt(10.0), arms: str = "sphere") -> Instance:
    """Seed 002 Sec 8.3 "randomized" instance (Fig. 3; from Tao et al. 2018 / Yang & Tan 2021):
    d = 10, theta = x_i + 0.01 (x_j - x_i) with (x_i, x_j) the two closest arms.

    Sec 8.3 does not state the noise; App. E.3 repeats "the same experiment ... but with
    sigma^2 = 1", so Sec 8.3 used another variance; we default to that of Sec 8.1, sigma^2 = 10
    (an assumption: pass ``noise`` to change it; ``sphere_odlinbai`` is the sigma^2 = 1 variant).
    The released code's job script confirms sigma^2 = 10 for every synthetic experiment.
    ``arms="cube"`` draws the arms as the released code does (see :func:`unit_sphere`).
    """
    return unit_sphere(key, num_arms, dim, alpha=0.01, noise=noise, arms=arms)


def sphere_odlinbai(key: jax.Array, num_arms: int, *, dim: int = 10, noise: float = 1.0,
                    arms: str = "sphere") -> Instance:
    """Seed 002 App. E.3 (Fig. 6): the Sec 8.3 sphere instance with sigma^2 = 1 (as Yang & Tan
    2021), d = 10, theta = x_i + 0.01 (x_j - x_i).  ``arms="cube"``: the released code's arms."""
    return unit_sphere(key, num_arms, dim, alpha=0.01, noise=noise, arms=arms)


# ------------------------------------------------------------------------------------------------
# 4. transductive example
# ------------------------------------------------------------------------------------------------
def transductive_example(d: int = 40, *, omega: float = 0.1, noise: float = 1.0) -> Instance:
    """The transductive example of seed 001 Sec 5 (Fig. 1d): X != Z.

    d even; X = {e_1, ..., e_d}; Z has d items: z_j = e_j for j <= d/2 and
    z_{d/2+j} = cos(omega) e_j + sin(omega) e_{j+d/2}; theta = e_1, so z_1 (index 0) is best and
    z_{d/2+1} (index d/2) is the hard competitor with gap 1 - cos(0.1) ~ 5.0e-3.

    Defaults: omega = 0.1, standard normal noise, delta = 0.05.  The released code
    (run_transductive.py) calls d/2 "d" and sweeps it in {20, 40, 60, 80}, i.e. ambient
    dimension d in {40, 80, 120, 160}.
    """
    if d < 2 or d % 2:
        raise ValueError(f"the transductive example needs an even d >= 2, got {d}")
    h = d // 2
    eye = np.eye(d)
    Z = np.concatenate([eye[:h], math.cos(omega) * eye[:h] + math.sin(omega) * eye[h:]], axis=0)
    theta = eye[0]
    return make_instance(eye, theta, noise, items=Z)


# ------------------------------------------------------------------------------------------------
# 5. multivariate testing (factorial design with pairwise interactions)
# ------------------------------------------------------------------------------------------------
def factorial_features(num_factors: int) -> np.ndarray:
    """Arms of a 2-level full factorial design with pairwise interactions [2^D, 1 + D + D(D-1)/2].

    Row for layout w in {-1, 1}^D: (1, w_1, ..., w_D, w_k w_l for k < l) (seed 001 Sec 5,
    "multivariate testing").  Layouts are enumerated in ``itertools.product([-1, 1], repeat=D)``
    order (first factor slowest), as in the released code.
    """
    D = num_factors
    if D < 1:
        raise ValueError(f"need at least one factor, got {D}")
    idx = np.arange(2 ** D)
    bits = (idx[:, None] >> np.arange(D - 1, -1, -1)[None, :]) & 1
    W = (2.0 * bits - 1.0)
    k, l = np.triu_indices(D, 1)
    pairs = W[:, k] * W[:, l]
    return np.concatenate([np.ones((2 ** D, 1)), W, pairs], axis=1)


@_jit("num_factors", "weight_range", "granularity", "max_tries")
def multivariate_testing(key: jax.Array, num_factors: int = 3, *, alpha1: float = 1.0,
                         alpha2: float = 0.5, weight_range: float = 0.3,
                         granularity: float = 0.01, min_gap: float = 1e-5, max_tries: int = 16,
                         noise: float = 1.0) -> Instance:
    """The multivariate-testing example of seed 001 Sec 5 (Fig. 2a).

    D factors with 2 levels; K = 2^D layouts; arms X = Z = :func:`factorial_features` in
    {-1, 1}^(1 + D + D(D-1)/2); mean reward
    x^T theta* = theta_0 + alpha1 sum_j theta_j w_j + alpha2 sum_{k<l} theta_kl w_k w_l,
    so the returned theta is (theta_0, alpha1 theta_j, alpha2 theta_kl).  The raw weights are
    drawn from the discrete uniform distribution on [-0.3, 0.3] with granularity 0.01; alpha1 = 1,
    alpha2 = 0.5.  As the released code (run_orthogonal.py) does, draws whose best two layouts are
    closer than ``min_gap`` = 1e-5 are rejected: ``max_tries`` candidates are drawn and the first
    acceptable one kept (the last one if none is; jit-safe).

    The released code differs from the text: weights randint(-10, 10)/100 (range [-0.10, 0.09])
    and alpha2 applied to the first interaction weight only.  Code sweeps D in {3, 4, 5, 6},
    50 instances each; standard normal noise, delta = 0.05.
    """
    X = jnp.asarray(factorial_features(num_factors), _float())
    D = num_factors
    p = X.shape[1]
    n_levels = int(round(2 * weight_range / granularity))
    raw = jax.random.randint(key, (max_tries, p), 0, n_levels + 1)
    w = -weight_range + granularity * raw.astype(_float())
    scale = jnp.concatenate([jnp.ones(1), alpha1 * jnp.ones(D), alpha2 * jnp.ones(p - 1 - D)])
    thetas = w * scale
    vals = thetas @ X.T                                      # [tries, K]
    top2 = jax.lax.top_k(vals, 2)[0]
    ok = (top2[:, 0] - top2[:, 1]) >= min_gap
    pick = jnp.where(jnp.any(ok), jnp.argmax(ok), max_tries - 1)
    return make_instance(X, thetas[pick], noise)


# ------------------------------------------------------------------------------------------------
# 6. static instance (seed 002 Sec 8.2)
# ------------------------------------------------------------------------------------------------
def static_basis(gap: float = 0.1, *, d: int = 16, noise: float = 1.0) -> Instance:
    """The static-allocation instance of seed 002 Sec 8.2 (Fig. 1; from Xu et al. 2018).

    Arms e_1, ..., e_16 (K = d = 16), theta = (Delta, 0, ..., 0): every suboptimal arm has gap
    Delta, and knowing the rewards does not change the optimal (uniform) allocation.  Seed 002
    uses B = 320 and sweeps Delta (Fig. 1's x-axis; the values are only in the figure, the default
    0.1 here is ours).  The noise is not stated in Sec 8.2; sigma = 1 by default.
    """
    theta = np.zeros(d)
    theta[0] = gap
    return make_instance(np.eye(d), theta, noise)


# ------------------------------------------------------------------------------------------------
# 7. logistic instance (seed 002 Sec 8.4)
# ------------------------------------------------------------------------------------------------
@_jit("num_arms", "dim", "theta_std")
def logistic_gse(key: jax.Array, num_arms: int = 8, dim: int = 5, *,
                 theta_std: float | None = None) -> Instance:
    """The logistic-bandit instance of seed 002 Sec 8.4 (Fig. 4), ``model="logistic"``.

    Arms i.i.d. uniform on [-0.5, 0.5]^d, theta ~ N(0, (3/d) I_d), rewards
    Bernoulli(sigmoid(x^T theta)).  Seed 002 uses K = 8 and d in {5, 7, 10, 12}.  ``noise`` is
    set to 1/2 (the sub-Gaussian scale of a Bernoulli reward); the logistic model ignores it.

    ``theta_std``: the standard deviation of theta's coordinates, default sqrt(3 / d) (the text's
    variance 3 / d); the released code draws ``normal(0, 3 / d)``, i.e. standard deviation 3 / d
    (pass ``theta_std=3 / dim`` for its instances: smaller gaps, 0.77x the text's at d = 5,
    0.5x at d = 12).
    """
    kx, kt = jax.random.split(key)
    X = jax.random.uniform(kx, (num_arms, dim), _float(), -0.5, 0.5)
    std = math.sqrt(3.0 / dim) if theta_std is None else float(theta_std)
    theta = std * jax.random.normal(kt, (dim,), _float())
    return make_instance(X, theta, 0.5, model="logistic")


# ------------------------------------------------------------------------------------------------
# 8. Top-m instances (seed 003)
# ------------------------------------------------------------------------------------------------
def topm_classic(num_arms: int = 4, m: int = 2, *, omega: float = math.pi / 6,
                 noise: float = 0.5) -> Instance:
    """The "classic" Top-m instance of seed 003 Sec 5 (Fig. 1a, App. A.1 Fig. 2).

    K arms in R^(K-1) (N = K - 1), theta = e_1: x_1 = e_1, x_a = e_1 + e_a for 2 <= a <= m,
    x_{m+1} = cos(omega) e_1 + sin(omega) e_{m+1}, x_a = e_{a-1} for a > m + 1.  Means are 1 for
    the m best arms, cos(omega) for arm m+1 and 0 for the rest, so mu_m - mu_{m+1} = 1 - cos(omega)
    (~0.13 for omega = pi/6).  The text writes x_a = e_1 + e_a for all a in [m], which would make
    x_1 = 2 e_1; we follow the released code (Code/data.py), where x_1 = e_1 and "arms 1..m have
    rewards == 1" (also the only reading consistent with Fig. 1b's gap 0.005 for m = 1).

    Defaults (Sec 5): K = 4, m = 2, omega = pi/6 (also pi/3 in App. A.1), sigma = 1/2,
    epsilon = 0, delta = 5%, 500 runs.  ``m`` is an algorithm parameter: pass the same m to it.
    """
    K = num_arms
    N = K - 1
    if not 1 <= m < N:
        raise ValueError(f"need 1 <= m < K - 1, got m = {m}, K = {K}")
    eye = np.eye(N)
    rows = [eye[0]] + [eye[0] + eye[a] for a in range(1, m)]
    rows.append(math.cos(omega) * eye[0] + math.sin(omega) * eye[m])
    rows += [eye[a - 2] for a in range(m + 2, K + 1)]  # x_a = e_{a-1} (1-based)
    return make_instance(np.stack(rows), eye[0], noise)


def topm_hard_top1(*, omega: float = 0.1, noise: float = 0.5) -> Instance:
    """The hard Top-1 instance of seed 003 Fig. 1(b): the classic instance with K = 3, m = 1,
    omega = 0.1, i.e. Soare et al.'s three arms e_1, (cos 0.1, sin 0.1), e_2 with theta = e_1;
    mu_1 - mu_2 = 1 - cos(0.1) ~ 0.005; sigma = 1/2, delta = 5%."""
    return topm_classic(3, 1, omega=omega, noise=noise)


#: Settings (D, K, m, N) of seed 003 Table 4 (1000 random instances each).  m = floor(K/3) + 1
#: as in the released code (compare_complexity_constants.py) and the table; the text says [K/3].
TOPM_TABLE4 = tuple(
    dict(D=D, K=K, m=K // 3 + 1, N=N)
    for (D, K, N) in [
        (0.25, 10, 5), (0.5, 10, 5), (0.25, 10, 10), (0.5, 10, 10), (0.25, 10, 20), (0.5, 10, 20),
        (0.25, 20, 10), (0.25, 20, 20), (0.5, 20, 20), (0.25, 20, 40), (0.5, 20, 40),
        (0.25, 30, 15), (0.5, 30, 15), (0.25, 30, 30), (0.5, 30, 30),
    ]
)


def topm_table4_m(num_arms: int) -> int:
    """m used with K arms in seed 003 Table 4: floor(K/3) + 1 (4, 7, 11 for K = 10, 20, 30)."""
    return num_arms // 3 + 1


@_jit("num_arms", "dim", "normalize")
def topm_random_gaussian(key: jax.Array, num_arms: int = 10, dim: int = 5, *, D: float = 0.25,
                         normalize: str = "spectral", noise: float = 0.5) -> Instance:
    """Random Gaussian Top-m instances of seed 003 Sec 4.4 / App. A.2 (Table 4).

    K x N values from N(0, D) form X' in R^(N x K), normalised to X; arms are the columns of X
    (returned as rows), theta = e_1 in R^N.  ``normalize``:

    * ``"spectral"`` (default): X = X' / ||X'||_2 (largest singular value), what the released code
      does (``X /= np.linalg.norm(X, 2)``; it also passes D as the *standard deviation*).  This
      normalisation is scale-free, so D has no effect on the instance distribution.
    * ``"columns"``: every arm scaled to unit Euclidean norm, the text's "column-normalized".

    Table 4 settings are in :data:`TOPM_TABLE4`; m = :func:`topm_table4_m`; sigma = 1/2 as in
    Sec 5 (App. A.2 uses Gaussian rewards without stating sigma).
    """
    g = jnp.sqrt(D) * jax.random.normal(key, (num_arms, dim), _float())
    if normalize == "spectral":
        X = g / jnp.linalg.norm(g, ord=2)
    elif normalize == "columns":
        X = g / jnp.linalg.norm(g, axis=-1, keepdims=True)
    else:
        raise ValueError(f"normalize must be 'spectral' or 'columns', got {normalize!r}")
    theta = jnp.zeros(dim).at[0].set(1.0)
    return make_instance(X, theta, noise)


@_jit("num_arms", "dim")
def sphere_calibrated(key: jax.Array, num_arms: int, dim: int, *, hardness: float = 1000.0) -> Instance:
    """Arms i.i.d. uniform on the unit sphere of R^dim, theta an independent uniform direction,
    and the Gaussian noise scale set so that sigma^2 T*(theta) = ``hardness`` (seed 000 Thm 1's
    lower bound is then ``hardness * kl(delta, 1 - delta)`` on every instance).

    Not a seed-paper instance: a distribution for sweeps over (d, K).  With a random theta the gap
    between the two best arms shrinks fast with K (dense arms in low dimension give gaps ~1e-5,
    sample complexities ~1e10), so a fixed noise makes most of the (d, K) grid infeasible; scaling
    the noise fixes the optimal sample complexity and leaves the geometry (how the arms and theta
    sit, which is what separates the algorithms) random.  Ratios E[tau] / lower bound are
    invariant to this scaling for sigma-aware algorithms.
    """
    from jaxbandits.design import characteristic_time

    kx, kt = jax.random.split(key)
    g = jax.random.normal(kx, (num_arms, dim), _float())
    X = g / jnp.linalg.norm(g, axis=-1, keepdims=True)
    t = jax.random.normal(kt, (dim,), _float())
    theta = t / jnp.linalg.norm(t)
    tstar = characteristic_time(make_instance(X, theta, 1.0))
    return make_instance(X, theta, jnp.sqrt(hardness / tstar))

# ------------------------------------------------------------------------------------------------
# 9. Instances shipped as data
# ------------------------------------------------------------------------------------------------
#: the package's folder of instance data (``files/README.md`` there lists every file with its provenance)
DATA_FILES = "files"


def _data_file(name: str):
    """The shipped data file ``name`` (inside the installed package: ``jaxbandits/instances/files``)."""
    from importlib.resources import files

    return files("jaxbandits.instances").joinpath(DATA_FILES, name)


def tirinzoni_degenne_table1(*, noise: float = 1.0) -> Instance:
    """The linear best-arm and top-5 instance of Tirinzoni & Degenne, "On elimination strategies for
    bandit fixed-confidence identification", NeurIPS 2022, Table 1: d = 20, K = 50.

    Loaded from ``jaxbandits/instances/files/td_linear_d20_k50.npz`` (shipped with the package, 8 KB),
    whose fields are ``arms`` [50, 20] (one arm vector per row) and ``theta`` [20], both float64.
    The file was rebuilt from the generator of the authors' experiment scripts
    (github.com/AndreaTirinzoni/bandit-elimination, ``experiments/linear_bai.jl`` and
    ``linear_topm.jl``): the first ten arms are e_1..e_10; theta = (1, 0.9 x 4, 0.8 x 5, u - 1) with
    u the draws of Julia's ``MersenneTwister(123)``; then random unit vectors v (2 rand(20) - 1,
    normalised) kept while v^T theta <= 0.5, until K = 50 (53 draws).  Julia's generator
    (dSFMT-19937) was re-implemented to draw the same stream, checked against the values documented
    for ``MersenneTwister(1234)``.  Best arm e_1 (gap 0.1 to e_2..e_5), top-5 e_1..e_5 (gap 0.1 to
    e_6..e_10).  The paper: Gaussian noise with standard deviation ``noise`` = 1, delta = 0.01, 100 runs
    per algorithm, runs forced to stop at 10^6 samples.
    """
    with _data_file("td_linear_d20_k50.npz").open("rb") as f:
        z = np.load(f)
        arms, theta = np.asarray(z["arms"], np.float64), np.asarray(z["theta"], np.float64)
    return make_instance(arms, theta, noise)


# float64 inside every public function, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), __all__)
