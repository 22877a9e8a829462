"""Rules for K-armed bandits in a one-parameter exponential family (Gaussian with known variance,
Bernoulli): the instance is :func:`jaxbandits.instances.k_armed` (arms = items = I_K), and the rules
read the per-arm counts N_a(t) and sums of the statistics, mu_hat_a(t) = S_a(t) / N_a(t).

* :class:`ChernoffGLR`: Chernoff's stopping rule (Garivier & Kaufmann, COLT 2016, Sec 3.2):
  the empirical best arm b and
  Z(t) = min_{a != b} N_b d(mu_hat_b, m_ab) + N_a d(mu_hat_a, m_ab),
  m_ab = (N_b mu_hat_b + N_a mu_hat_a) / (N_b + N_a) (the GLR statistic, eq. (6)-(7) of the paper's
  Sec 3.2, :func:`jaxbandits.design.karmed.pair_cost`), against beta(t, delta)
  (:data:`jaxbandits.rules.thresholds.ALIASES` ``["karmed"]``).
* :class:`TopTwo`: Top Two sampling (EB-TC, T3C) with the transportation-cost challenger;
  :class:`KLLUCB` and :class:`LUCBStop`: KL-LUCB (Kaufmann & Kalyanakrishnan 2013).
* :class:`EBTCEpsilon`: the sampling rule of EB-TCε (Jourdan, Degenne & Kaufmann, NeurIPS 2023;
  Gaussian arms): the empirical best leader, the challenger of slack eps0
  (:func:`epsilon_tc_challenger`) and K deterministic tracking procedures, one per leader; its
  stopping rule is :class:`ChernoffGLR` with the composition's epsilon (:func:`epsilon_glr_statistic`).
* :class:`TrackAndStop`: the sampling rule of Track-and-Stop (Garivier & Kaufmann 2016, Sec 3.1):
  w*(mu_hat(t)) (:func:`jaxbandits.design.karmed.optimal_weights`, fixed trip counts) tracked by
  D-tracking with forced exploration, or by C-tracking of the eps_t-projected weights.

The divergence is the instance's reward model's (``instance.model``: "gaussian" with the noise
scale sigma of the composition, or "bernoulli").
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.design import karmed
from jaxbandits.instances.base import Instance
from jaxbandits.rules import thresholds
from jaxbandits.rules.core import Belief, Context, Decision, SamplingRule, StoppingRule

THRESHOLDS = thresholds.names("karmed")
TRACKINGS = ("D", "C")


def check_k_armed(instance: Instance, who: str) -> None:
    """Refuse (``ValueError``, host side) an instance that is not a K-armed bandit of a family with
    a divergence here: arms = items = the identity, Gaussian or Bernoulli rewards."""
    if instance.model not in karmed.FAMILIES:
        raise ValueError(f"{who} needs Gaussian or Bernoulli rewards (a one-parameter exponential family), "
                         f"got model={instance.model!r}")
    X, Z = np.asarray(instance.arms), np.asarray(instance.items)
    K = X.shape[-2]
    eye = np.eye(K)
    if X.shape[-1] != K or not np.array_equal(X, np.broadcast_to(eye, X.shape)) or not np.array_equal(X, Z):
        raise ValueError(f"{who} is for K-armed bandits: arms = items = the identity matrix "
                         "(build the instance with jaxbandits.instances.k_armed)")


def empirical_means(stats: common.LinearStats) -> jax.Array:
    """mu_hat_a = S_a / N_a (0 where N_a = 0)."""
    return stats.sums / jnp.maximum(stats.counts, 1.0)


def chernoff_statistic(family: str, mu: jax.Array, counts: jax.Array, valid: jax.Array, sigma):
    """(Z(t), b): the empirical best arm b (the first of the empirical maxima) and Chernoff's
    statistic min_{a != b} N_b d(mu_b, m_ab) + N_a d(mu_a, m_ab) (module docstring), in KL units
    (0 when another arm ties with b)."""
    b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
    cost = karmed.pair_cost(family, mu[b], mu, counts[b], counts, sigma)
    others = valid & (jnp.arange(mu.shape[0]) != b)
    return jnp.min(jnp.where(others, cost, jnp.inf)), b


def epsilon_glr_statistic(mu: jax.Array, counts: jax.Array, valid: jax.Array, sigma, epsilon):
    """(Z_eps(t), b): the empirical best arm b and the epsilon-GLR of Gaussian arms with known
    variance (Jourdan, Degenne & Kaufmann, "An epsilon-Best-Arm Identification Algorithm for
    Fixed-Confidence and Beyond", NeurIPS 2023, the stopping rule of EB-TCε),

        Z_eps(t) = min_{a != b} sign(x_a) x_a^2 / (2 sigma^2 (1 / N_b + 1 / N_a)),  x_a = mu_b - mu_a + eps,

    in KL units.  It is written as the Gaussian :func:`jaxbandits.design.karmed.pair_cost` of the
    means (mu_b + eps, mu_a), so that at eps = 0 it is, operation for operation, the statistic of
    :func:`chernoff_statistic`.  (With b the empirical best arm x_a >= eps >= 0, so the sign only
    matters for a leader other than the empirical best.)"""
    b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
    x = mu[b] + epsilon - mu
    cost = jnp.sign(x) * karmed.pair_cost("gaussian", mu[b] + epsilon, mu, counts[b], counts, sigma)
    others = valid & (jnp.arange(mu.shape[0]) != b)
    return jnp.min(jnp.where(others, cost, jnp.inf)), b


@dataclasses.dataclass(frozen=True)
class ChernoffGLR(StoppingRule):
    """Chernoff's stopping rule (Garivier & Kaufmann 2016, Sec 3.2; module docstring): stop when
    Z(t) > beta(t, delta), recommend the empirical best arm; ready once every arm was pulled.

    Units: for Gaussian rewards the statistic is stated for unit variance and the threshold
    multiplied by sigma^2 (the convention of :class:`~jaxbandits.rules.core.Decision`); for
    Bernoulli rewards both are in KL units.

    epsilon-best answers (Gaussian arms): with the composition's slack eps = ``ctx.epsilon`` > 0
    the statistic is the epsilon-GLR Z_eps(t) of :func:`epsilon_glr_statistic` (the stopping rule of
    EB-TCε, Jourdan, Degenne & Kaufmann, NeurIPS 2023), and the empirical best arm is certified
    epsilon-good; at eps = 0 it is Chernoff's statistic, operation for operation.  Bernoulli arms
    with eps > 0 are refused (:meth:`check_epsilon`).

    Attributes:
      threshold: ``"heuristic"`` log((1 + log t) / delta) (the paper's experiments, Sec 6),
        ``"gk16"`` log(2 t (K - 1) / delta) (delta-correct for Bernoulli arms under any sampling
        rule, Sec 4), ``"log_t"`` log((t + 1) / delta), or ``"kaufmann_koolen"``
        2 C_G(log((K - 1) / delta) / 2) + 4 log(4 + log(t / 2)) (delta-correct for Gaussian arms
        under any sampling rule, :func:`jaxbandits.rules.thresholds.kaufmann_koolen`)
        (:mod:`jaxbandits.rules.thresholds`).
    """

    threshold: str = "heuristic"

    epsilon_good: ClassVar[bool] = True

    def __post_init__(self):
        thresholds.resolve("karmed", self.threshold)

    def check_epsilon(self, epsilon: float, instance: Instance) -> None:
        if epsilon > 0 and instance.model != "gaussian":
            raise ValueError(f"ChernoffGLR: epsilon = {epsilon} (epsilon-best answers) is defined here for Gaussian "
                             f"arms only, got model={instance.model!r}; use epsilon = 0 for Bernoulli arms")

    def prior(self, instance: Instance) -> Belief:
        dt = instance.arms.dtype
        return Belief(common.init_stats(instance), jnp.zeros((), jnp.int32), jnp.zeros((instance.num_arms,), dt),
                      None, None, jnp.zeros((), jnp.int32))

    def _beta_kl(self, t, ctx: Context):
        """beta(t, delta) in KL units."""
        instance = ctx.instance
        t = jnp.maximum(jnp.asarray(t, instance.arms.dtype), 1.0)
        rule = thresholds.resolve("karmed", self.threshold)
        if rule == "log_log_t":
            return thresholds.log_log_t(t, ctx.delta)
        if rule == "log_t":
            return thresholds.log_t(t, ctx.delta)
        K = jnp.asarray(instance.true_num_arms(), instance.arms.dtype)
        if rule == "kaufmann_koolen":
            return thresholds.kaufmann_koolen(t, ctx.delta, K)
        return thresholds.chernoff_bernoulli(t, ctx.delta, K)

    def _scale(self, ctx: Context):
        return ctx.sigma**2 if ctx.instance.model == "gaussian" else jnp.ones((), ctx.instance.arms.dtype)

    def beta(self, stats: common.LinearStats, t: jax.Array, ctx: Context):
        valid = ctx.instance.valid_arms()
        ready = jnp.all(jnp.where(valid, stats.counts >= 1, True))
        return self._scale(ctx) * self._beta_kl(t, ctx), ready

    def decide(self, stats: common.LinearStats, t: jax.Array, ctx: Context) -> Decision:
        instance = ctx.instance
        mu = empirical_means(stats)
        if instance.model == "gaussian":
            z, b = epsilon_glr_statistic(mu, stats.counts, instance.valid_arms(), ctx.sigma, ctx.epsilon)
        else:
            z, b = chernoff_statistic(instance.model, mu, stats.counts, instance.valid_arms(), ctx.sigma)
        beta, ready = self.beta(stats, t, ctx)
        return Decision(Belief(stats, t, mu, None, None, b.astype(jnp.int32)), self._scale(ctx) * z, beta, ready)

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "ChernoffGLR")
        if thresholds.resolve("karmed", self.threshold) == "chernoff_bernoulli" and instance.model != "bernoulli":
            raise ValueError("threshold='gk16' (log(2 t (K - 1) / delta)) is Garivier & Kaufmann's threshold for "
                             "Bernoulli arms; use 'heuristic' or 'log_t' for Gaussian arms")
        if self.threshold == "kaufmann_koolen" and instance.model != "gaussian":
            raise ValueError("threshold='kaufmann_koolen' is Kaufmann & Koolen's calibration of Gaussian arms, got "
                             f"model={instance.model!r}; use 'gk16', 'heuristic' or 'log_t' for Bernoulli arms")


def check_pair_threshold(threshold: str, who: str) -> None:
    """Refuse the pair-GLR threshold ``"kaufmann_koolen"`` as the per-arm exploration rate of
    KL-LUCB (host side)."""
    if threshold == "kaufmann_koolen":
        raise ValueError(f"{who}: threshold='kaufmann_koolen' calibrates the GLR of a pair of arms, not one arm's KL "
                         "confidence bound; allowed: 'heuristic', 'gk16' or 'log_t'")


class TrackingState(NamedTuple):
    cum: jax.Array       # [K] sum of the tracked (projected) weights: C-tracking; the counts for D
    gap: jax.Array       # largest relative certified gap of the w* solves (ties excluded)


@dataclasses.dataclass(frozen=True)
class TrackAndStop(SamplingRule):
    """Track-and-Stop's sampling rule (Garivier & Kaufmann, COLT 2016, Sec 3.1), on the empirical
    means mu_hat(t) (module docstring).  Draws one key per step (ties among the empirical best
    arms are broken at random, as the authors' code does).

    * D-tracking (``tracking="D"``): with U_t = {a : N_a(t) <= max(sqrt(t) - K/2, 0)}, pull
      argmin_{a in U_t} N_a(t) if U_t is not empty (forced exploration), else
      argmax_a w*_a(mu_hat(t)) - N_a(t) / t; when several arms share the largest empirical mean,
      pull one of them at random (the authors' released ``TrackAndStop``).
    * C-tracking (``tracking="C"``): pull argmax_a sum_{s <= t} w^{eps_s}_a(s) - N_a(t), with
      w^eps the L-infinity projection of w*(mu_hat(s)) on {w : w_a >= eps}, eps_s = (K^2 + s)^-1/2 / 2
      (:func:`jaxbandits.design.karmed.epsilon_projection`); the sum starts from the counts of the
      initialisation.  With tied empirical best arms w* is uniform on them.

    w*(mu_hat(t)) is solved at every step by :func:`jaxbandits.design.karmed.optimal_weights` with
    ``outer`` and ``inner`` Newton steps; the largest relative certified gap of a run is kept
    (``state.gap``), and a run whose gap exceeded ``solver_tol`` is reported not converged.

    Attributes:
      tracking: "D" or "C".
      outer, inner: the solver's trip counts (static).
      solver_tol: the relative certified gap of w* above which a run is flagged.
      variances: None (the family's divergence with the composition's sigma), or for Gaussian arms
        with per-arm variances "known" (the instance's sigma_a^2) or "empirical" (the empirical
        variances of the stopping rule's :class:`SquaresCarry` plugged in: the plug-in
        Track-and-Stop of Jourdan, Degenne & Kaufmann, ALT 2023); w*(mu_hat, s^2) is then
        :func:`jaxbandits.design.karmed.heteroscedastic_weights` (``outer`` and ``inner`` unused).
    """

    draws: ClassVar[int] = 1
    reads: ClassVar[tuple[str, ...]] = ()
    tracking: str = "D"
    outer: int = hyperparameter(12, count=1)
    inner: int = hyperparameter(8, count=1)
    solver_tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    variances: str | None = None

    def __post_init__(self):
        if self.tracking not in TRACKINGS:
            raise ValueError(f"tracking must be one of {TRACKINGS}, got {self.tracking!r}")
        if self.variances is not None:
            check_variances(self.variances)

    @property
    def supports_arm_noise(self) -> bool:
        return self.variances is not None

    def init(self, key, instance: Instance) -> TrackingState:
        dt = instance.arms.dtype
        return TrackingState(jnp.zeros((instance.num_arms,), dt), jnp.zeros((), dt))

    def update(self, keys, state: TrackingState, belief: Belief, ctx: Context):
        (key,) = keys
        instance = ctx.instance
        dt = instance.arms.dtype
        valid = instance.valid_arms()
        counts = belief.stats.counts
        mu = empirical_means(belief.stats)
        if self.variances is None:
            sol = karmed.optimal_weights(mu, instance.model, sigma=ctx.sigma, mask=valid,
                                         outer=int(self.outer), inner=int(self.inner))
        else:  # Gaussian arms, per-arm variances (known, or the empirical ones plugged in)
            var = arm_variances(self.variances, belief.stats, belief.carry, ctx)
            sol = karmed.heteroscedastic_weights(mu, jnp.sqrt(var), mask=valid)
        w = sol.allocation
        rel = jnp.where(jnp.isfinite(sol.value), sol.gap / sol.value, 0.0)
        gap = jnp.maximum(state.gap, jnp.where(belief.t >= ctx.start, rel, 0.0))
        t = jnp.maximum(belief.t.astype(dt), 1.0)
        K = jnp.asarray(instance.true_num_arms(), dt)
        pulled = jnp.where(valid, counts, jnp.inf)
        if self.tracking == "D":
            top = jnp.max(jnp.where(valid, mu, -jnp.inf))
            is_max = valid & (mu == top)
            tie = jnp.sum(is_max) > 1
            random_max = common.argmax_fast(jnp.where(is_max, jax.random.uniform(key, mu.shape, dt), -1.0))
            starved = jnp.min(pulled) <= jnp.maximum(jnp.sqrt(t) - K / 2.0, 0.0)
            track = common.argmax_fast(jnp.where(valid, w - counts / t, -jnp.inf))
            arm = jnp.where(tie, random_max, jnp.where(starved, common.argmax_fast(-pulled), track))
            return arm, TrackingState(state.cum, gap)
        eps = karmed.c_tracking_eps(t, K).astype(dt)
        w_eps = jnp.where(valid, karmed.epsilon_projection(jnp.where(valid, w, 0.0), eps), 0.0)
        base = jnp.where(belief.t == ctx.start, counts, state.cum)   # tracking starts from the initial counts
        cum = base + w_eps
        arm = common.argmax_fast(jnp.where(valid, cum - counts, -jnp.inf))
        return arm, TrackingState(cum, gap)

    def converged(self, state: TrackingState):
        return state.gap <= self.solver_tol

    def validate(self, instance: Instance) -> None:
        (check_k_armed if self.variances is None else check_gaussian)(instance, "TrackAndStop")


# -- Top Two ------------------------------------------------------------------------------------------
LEADERS = ("EB", "TS")
CHALLENGERS = ("TC", "TS", "TCI")
#: how the leader's probability is chosen: ``"fixed"`` (the coin ``beta``) or ``"ids"``
#: (information-directed selection, :func:`ids_coin`)
SELECTIONS = ("fixed", "ids")


def tc_challenger(family: str, mu, counts, leader, valid, sigma, penalty=None):
    """The transportation-cost challenger argmin_{a != B} W(B, a), W(B, a) = 1{mu_B > mu_a}
    [N_B d(mu_B, m) + N_a d(mu_a, m)] (Jourdan, Degenne, Baudry, de Heide & Kaufmann, "Top Two
    algorithms revisited", NeurIPS 2022, eq. (4); Shang et al. 2020, T3C); ties towards the smaller
    index.

    ``penalty`` ([K], added to the costs): with log N_a, the TCI challenger argmin_{a != B} W(B, a) + log N_a (natural logarithm of the
    count itself, no +1; the first of the minima), the form of the C port of the authors' Julia code
    (jvc56/MAGPIE, commit fbbca5e9 ``src/impl/bai_sampling_rule.c``, ``top_two_next_sample``,
    ``BAI_TOP_TWO_CHALLENGER_TCI``: ``Zs[i] + log((double)N[i])`` minimised with a strict ``<``,
    ``Zs`` the GLR of the empirical best arm against each arm and +inf at the empirical best arm).
    TCI's definition in the paper's own text was not read (its equation number is not cited)."""
    cost = karmed.pair_cost(family, mu[leader], mu, counts[leader], counts, sigma)
    cost = jnp.where(mu < mu[leader], cost, 0.0)
    if penalty is not None:
        cost = cost + penalty
    others = valid & (jnp.arange(mu.shape[0]) != leader)
    return common.argmax_fast(-jnp.where(others, cost, jnp.inf))


def ids_coin(family: str, mu, counts, leader, challenger, sigma):
    """The leader's probability of information-directed selection (You, Qin, Wang & Yang,
    "Information-directed selection for top-two algorithms", ICML 2023):

        h = N_B d(mu_B, m) / (N_B d(mu_B, m) + N_C d(mu_C, m)),  m = (N_B mu_B + N_C mu_C) / (N_B + N_C),

    B the leader and C the challenger, the form of the authors' code (zihaophys/topk_colt23, commit
    21973f25, ``algorithm.jl``, ``TSKKT_point5_ids``, "step 3: toss a biased optimized coin", with
    M = 1; its weights psi = N / t cancel in the ratio) and of its C port (jvc56/MAGPIE, commit
    183bebc4, ``src/impl/bai.h``, ``BAI_SAMPLING_RULE_TOP_TWO_IDS``).  The leader is pulled when a
    uniform draw is < h; where the denominator is 0 (mu_B = mu_C) the sources' ratio is NaN, the
    comparison false and the challenger pulled: h = 0 here.  Read in the code, not in the paper's text."""
    nb, nc = counts[leader], counts[challenger]
    tot = jnp.maximum(nb + nc, 1.0)
    m = (nb * mu[leader] + nc * mu[challenger]) / tot
    num = nb * karmed.divergence(family, mu[leader], m, sigma)
    den = num + nc * karmed.divergence(family, mu[challenger], m, sigma)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)


def heteroscedastic_tc_challenger(mu, counts, var, leader, valid):
    """The transportation-cost challenger of :func:`tc_challenger` for Gaussian arms of variances
    ``var``: argmin_{a != B} 1{mu_B > mu_a} (mu_B - mu_a)^2 / (2 (var_B / N_B + var_a / N_a)) (with
    the empirical variances: the plug-in EB-TC / T3C of Jourdan, Degenne & Kaufmann, ALT 2023)."""
    cost = karmed.heteroscedastic_pair_cost(mu[leader], mu, counts[leader], counts, var[leader], var)
    others = valid & (jnp.arange(mu.shape[0]) != leader)
    return common.argmax_fast(-jnp.where(others, cost, jnp.inf))


#: the Beta samplers of the Thompson leader on Bernoulli arms: ``"rejection"`` (``jax.random.beta``,
#: whose rejection loop runs until every lane accepts) or ``"bounded"`` (:func:`beta_bounded`)
BETA_SAMPLERS = ("rejection", "bounded")


def gamma_bounded(key, shape_a, proposals: int = 8):
    """(G, ok): a Gamma(shape_a, 1) draw for every entry of ``shape_a`` (all >= 1) by Marsaglia &
    Tsang's method ("A simple method for generating gamma variables", ACM TOMS 2000) with a fixed
    number of proposals: d = a - 1/3, c = 1 / sqrt(9 d); proposal d v, v = (1 + c x)^3, x ~ N(0, 1),
    accepted when v > 0 and log U < x^2 / 2 + d - d v + d log v; the first accepted proposal is
    returned, so that, given ``ok``, G has exactly the Gamma law.  Each proposal is accepted with
    probability above 0.95 for a >= 1, so all ``proposals`` fail with probability below
    0.05^proposals (``ok`` False, G the last proposal's d v clipped to be positive)."""
    dt = shape_a.dtype
    kx, ku = jax.random.split(key)
    x = jax.random.normal(kx, (proposals,) + shape_a.shape, dt)
    u = jax.random.uniform(ku, (proposals,) + shape_a.shape, dt)
    d = shape_a - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    v = (1.0 + c * x) ** 3
    vpos = jnp.where(v > 0, v, 1.0)
    accept = (v > 0) & (jnp.log(u) < 0.5 * x * x + d - d * vpos + d * jnp.log(vpos))
    first = jnp.argmax(accept, axis=0)
    ok = jnp.any(accept, axis=0)
    g = d * jnp.take_along_axis(vpos, first[None], axis=0)[0]
    return g, ok


def beta_bounded(key, a, b, proposals: int = 8):
    """(X, ok): X = G_a / (G_a + G_b) ~ Beta(a, b) (a, b >= 1) from two :func:`gamma_bounded` draws:
    a fixed number of operations per draw (no data-dependent loop), exact given ``ok``."""
    ka, kb = jax.random.split(key)
    ga, oka = gamma_bounded(ka, a, proposals)
    gb, okb = gamma_bounded(kb, b, proposals)
    return ga / (ga + gb), oka & okb


def posterior_sample(key, family: str, stats: common.LinearStats, sigma):
    """One draw of the arms' means from their posterior: Beta(1 + S_a, 1 + N_a - S_a) for Bernoulli
    arms (uniform prior, Russo 2016; Shang et al. 2020), N(mu_hat_a, sigma^2 / N_a) for Gaussian arms
    (flat prior).  The Beta draws go through ``jax.random.beta`` (a rejection sampler)."""
    counts, sums = stats.counts, stats.sums
    if family == "bernoulli":
        return jax.random.beta(key, 1.0 + sums, 1.0 + counts - sums)
    mu = empirical_means(stats)
    return mu + sigma * jax.random.normal(key, mu.shape, mu.dtype) / jnp.sqrt(jnp.maximum(counts, 1.0))


def posterior_argmax_logprob(family: str, stats: common.LinearStats, sigma, valid, grid: int = 256):
    """[K] log P(argmax_a theta_a = j) under the posterior of :func:`posterior_sample`, by a fixed
    quadrature: alpha_j = E_{X ~ pi_j}[prod_{k != j} F_k(X)], on each arm's own grid
    X = m_j + s_j z (m_j, s_j its posterior mean and standard deviation, ``grid`` midpoints z in
    [-12, 12]), with pi_j's density (Beta or normal) and the other arms' posterior CDFs (the
    regularized incomplete beta function, or the normal CDF) in logarithms.  -inf off ``valid``."""
    counts, sums = stats.counts, stats.sums
    dt = sums.dtype
    z = -12.0 + 24.0 * (jnp.arange(grid, dtype=dt) + 0.5) / grid
    dz = 24.0 / grid
    if family == "bernoulli":
        a, b = 1.0 + sums, 1.0 + counts - sums
        m = a / (a + b)
        sd = jnp.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
        x = jnp.clip(m[:, None] + sd[:, None] * z[None, :], 1e-300, 1.0 - 1e-16)          # [K, G]
        logpdf = jax.scipy.stats.beta.logpdf(x, a[:, None], b[:, None])
        logcdf = jnp.log(jax.scipy.special.betainc(a[:, None, None], b[:, None, None], x[None, :, :]))  # [k, j, G]
    else:
        m = empirical_means(stats)
        sd = sigma / jnp.sqrt(jnp.maximum(counts, 1.0))
        x = m[:, None] + sd[:, None] * z[None, :]
        logpdf = jax.scipy.stats.norm.logpdf(x, m[:, None], sd[:, None])
        logcdf = jax.scipy.special.log_ndtr((x[None, :, :] - m[:, None, None]) / sd[:, None, None])
    K = counts.shape[0]
    others = valid[:, None] & ~jnp.eye(K, dtype=bool)                                      # [k, j]
    rest = jnp.sum(jnp.where(others[:, :, None], logcdf, 0.0), axis=0)                       # [j, G]
    log_alpha = jax.scipy.special.logsumexp(logpdf + rest, axis=-1) + jnp.log(sd * dz)
    return jnp.where(valid, log_alpha, -jnp.inf)


def check_top_two_options(leader: str, challenger: str, selection: str, variances) -> None:
    """Refuse (``ValueError``, host side) the Top Two options whose form was not confirmed: the
    TCI challenger with the Thompson leader, TCI or IDS with per-arm variances, an unknown
    ``selection``."""
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if challenger == "TCI" and leader != "EB":
        raise ValueError(f"challenger='TCI' is built with the empirical best leader only: leader must be 'EB', "
                         f"got leader={leader!r}")
    if variances is not None and (challenger == "TCI" or selection != "fixed"):
        raise ValueError(f"challenger='TCI' and selection='ids' are for one-parameter families: variances must be "
                         f"None, got variances={variances!r} (challenger={challenger!r}, selection={selection!r})")


@dataclasses.dataclass(frozen=True)
class TopTwo(SamplingRule):
    """Top Two sampling on K-armed exponential families (Jourdan et al., "Top Two algorithms
    revisited", NeurIPS 2022, Algorithm 1): a leader B_t, the transportation-cost challenger C_t
    (:func:`tc_challenger`), and B_t pulled with probability ``beta``, else C_t.

    * ``leader="EB"``: the empirical best arm (EB-TC; ties towards the smaller index);
    * ``leader="TS"``: the best arm of a posterior sample (:func:`posterior_sample`): T3C (Shang,
      de Heide, Kaufmann, Menard & Valko, AISTATS 2020).
    * ``challenger="TCI"`` (with ``leader="EB"``: EB-TCI): the transportation cost penalized by
      log N_a (:func:`tc_challenger` with ``penalized``; the form confirmed in the C port of the
      authors' code, which pairs it with the empirical best leader only).
    * ``selection="ids"``: instead of the fixed coin ``beta``, the leader is pulled with the
      information-directed probability of :func:`ids_coin` (You et al., ICML 2023), computed from
      the leader and the challenger of the step (``beta`` is then unused).
    * ``challenger="TS"`` (with ``leader="TS"``: TTTS, Russo, "Simple Bayesian algorithms for best
      arm identification", COLT 2016): Russo re-samples the posterior until its best arm is not
      the leader; the arm it ends on is a draw from the posterior law of the best arm conditioned
      on not being the leader, which is drawn here directly, from the probabilities of
      :func:`posterior_argmax_logprob` (a fixed quadrature: no loop; K^2 ``grid`` evaluations of
      the posterior CDFs per step, the regularized incomplete beta function for Bernoulli arms,
      which makes Bernoulli TTTS the costliest rule here).  When every other arm's
      probability underflows, the TC challenger is taken and the step counted in the state (a run
      with such a step is reported not converged).

    Draws three keys per step (the leader's, the coin's, the re-sampling's).

    Attributes:
      leader: "EB" or "TS".
      beta: the leader's probability, in (0, 1) (1/2 in the papers' experiments).
      challenger: "TC" (transportation cost), "TCI" (penalized transportation cost, ``leader="EB"``)
        or "TS" (re-sampling).
      selection: "fixed" (the coin ``beta``) or "ids" (information-directed selection); the
        options "TCI" and "ids" are for one-parameter families (``variances=None``).
      grid: quadrature points of the re-sampling challenger's probabilities (static).
      variances: None (the family's divergence with the composition's sigma), or for Gaussian arms
        "known" (the instance's sigma_a^2) or "empirical" (plugged in from the stopping rule's
        :class:`SquaresCarry`): the challenger's cost :func:`heteroscedastic_tc_challenger`, the
        Thompson leader's and TTTS's posteriors N(mu_hat_a, s_a^2 / N_a).
      beta_sampler: the Thompson leader's Beta draws on Bernoulli arms: ``"rejection"``
        (``jax.random.beta``) or ``"bounded"`` (:func:`beta_bounded`: Marsaglia & Tsang with a fixed
        number of proposals, no data-dependent loop in the step; a step whose proposals all failed,
        probability below 1e-10 per draw, is counted in the state and the run reported not converged).
    """

    draws: ClassVar[int] = 3
    reads: ClassVar[tuple[str, ...]] = ()
    leader: str = "EB"
    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)
    challenger: str = "TC"
    grid: int = hyperparameter(256, count=8)
    beta_sampler: str = "rejection"
    variances: str | None = None
    selection: str = "fixed"

    @property
    def supports_arm_noise(self) -> bool:
        return self.variances is not None

    def __post_init__(self):
        if self.variances is not None:
            check_variances(self.variances)
        if self.leader not in LEADERS:
            raise ValueError(f"leader must be one of {LEADERS}, got {self.leader!r}")
        if self.challenger not in CHALLENGERS:
            raise ValueError(f"challenger must be one of {CHALLENGERS}, got {self.challenger!r}")
        if self.beta_sampler not in BETA_SAMPLERS:
            raise ValueError(f"beta_sampler must be one of {BETA_SAMPLERS}, got {self.beta_sampler!r}")
        check_top_two_options(self.leader, self.challenger, self.selection, self.variances)

    def init(self, key, instance: Instance):
        # steps that fell back: the re-sampling challenger to TC, or the bounded Beta sampler
        return jnp.zeros((), jnp.int32)

    def _bounded(self) -> bool:
        return self.leader == "TS" and self.beta_sampler == "bounded"

    def converged(self, state):
        return state == 0 if self.challenger == "TS" or self._bounded() else None

    def update(self, keys, state, belief: Belief, ctx: Context):
        k_lead, k_coin, k_chal = keys
        instance = ctx.instance
        dt = instance.arms.dtype
        valid = instance.valid_arms()
        stats = belief.stats
        mu = empirical_means(stats)
        sigma = ctx.sigma
        if self.variances is not None:  # per-arm standard deviations (known, or plugged in)
            sigma = jnp.sqrt(arm_variances(self.variances, stats, belief.carry, ctx))
        if self.leader == "TS" and self._bounded() and instance.model == "bernoulli":
            sample, ok = beta_bounded(k_lead, 1.0 + stats.sums, 1.0 + stats.counts - stats.sums)
            lead = common.argmax_fast(jnp.where(valid, sample, -jnp.inf))
            state = state + (~jnp.all(ok | ~valid) & (belief.t >= ctx.start)).astype(jnp.int32)
        elif self.leader == "TS":
            sample = posterior_sample(k_lead, instance.model, stats, sigma)
            lead = common.argmax_fast(jnp.where(valid, sample, -jnp.inf))
        else:
            lead = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
        if self.variances is None:
            penalty = self.challenger_penalty(stats.counts) if self.challenger == "TCI" else None
            chal = tc_challenger(instance.model, mu, stats.counts, lead, valid, ctx.sigma, penalty)
        else:
            chal = heteroscedastic_tc_challenger(mu, stats.counts, sigma * sigma, lead, valid)
        if self.challenger == "TS":
            # TTTS: Russo's re-sampling ends on a draw from the posterior law of the best arm
            # conditioned on not being the leader: drawn here from that law directly
            logp = posterior_argmax_logprob(instance.model, stats, sigma, valid, int(self.grid))
            logp = jnp.where(jnp.arange(mu.shape[0]) == lead, -jnp.inf, logp)
            found = jnp.any(jnp.isfinite(logp))
            drawn = jax.random.categorical(k_chal, jnp.where(found, logp, 0.0))
            chal = jnp.where(found, drawn, chal)
            state = state + (~found & (belief.t >= ctx.start)).astype(jnp.int32)
        coin = self.leader_probability(instance.model, mu, stats.counts, lead, chal, ctx.sigma)
        arm = jnp.where(jax.random.uniform(k_coin, (), dt) < coin, lead, chal)
        return arm, state

    def challenger_penalty(self, counts):
        """[K] what the TCI challenger adds to the transportation costs: log N_a."""
        return jnp.log(counts)

    def leader_probability(self, family: str, mu, counts, leader, challenger, sigma):
        """The probability of pulling the leader: ``beta``, or :func:`ids_coin` (``selection="ids"``)."""
        if self.selection == "ids":
            return ids_coin(family, mu, counts, leader, challenger, sigma)
        return self.beta

    def validate(self, instance: Instance) -> None:
        (check_k_armed if self.variances is None else check_gaussian)(instance, "TopTwo")


# -- EB-TCε ---------------------------------------------------------------------------------------------
def epsilon_tc_challenger(mu, counts, leader, valid, epsilon0):
    """The challenger of EB-TCε: argmin_{a != B} (mu_B - mu_a + eps0) / sqrt(1 / N_B + 1 / N_a)
    (ties towards the smaller index), the square root of the Gaussian transportation cost with
    slack eps0 >= 0, signed; at eps0 = 0 it orders the arms as :func:`tc_challenger`'s cost."""
    ratio = (mu[leader] - mu + epsilon0) / jnp.sqrt(1.0 / jnp.maximum(counts[leader], 1.0)
                                                   + 1.0 / jnp.maximum(counts, 1.0))
    others = valid & (jnp.arange(mu.shape[0]) != leader)
    return common.argmax_fast(-jnp.where(others, ratio, jnp.inf))


def ids_gaussian_coin(counts, leader, challenger):
    """N_C / (N_B + N_C): :func:`ids_coin` of Gaussian arms in closed form (with mu_B != mu_C the
    common factor (mu_B - mu_C)^2 N_B N_C / (N_B + N_C)^2 cancels), also defined where the two
    empirical means are equal."""
    nb, nc = counts[leader], counts[challenger]
    return nc / jnp.maximum(nb + nc, 1.0)


class LeaderTracking(NamedTuple):
    """The K tracking procedures of EB-TCε, one per leader."""

    rounds: jax.Array    # [K] per leader i: its leader rounds T(i) ("fixed") or sum of its beta_t ("ids")
    own: jax.Array       # [K] per leader i: pulls of i in the rounds where i was the leader


@dataclasses.dataclass(frozen=True)
class EBTCEpsilon(SamplingRule):
    """The sampling rule of EB-TCε (Jourdan, Degenne & Kaufmann, "An epsilon-Best-Arm
    Identification Algorithm for Fixed-Confidence and Beyond", NeurIPS 2023, arXiv 2305.16041), on
    Gaussian arms with known variance.  Written from the paper's algorithm description (the
    equations, not released code; its equation numbers are not cited):

    * leader B_n = argmax_i mu_hat_i (ties towards the smaller index);
    * challenger C_n = argmin_{i != B_n} (mu_hat_B - mu_hat_i + eps0) / sqrt(1 / N_B + 1 / N_i)
      (:func:`epsilon_tc_challenger`);
    * selection by tracking, K procedures, one per leader, no random draw: with T_{n+1}(i) the
      rounds in which i was the leader (the current one counted) and N^i_{n,i} the pulls of i in
      those rounds, ``selection="fixed"`` pulls B_n if N^{B_n}_{n,B_n} <= beta T_{n+1}(B_n), else C_n;
      ``selection="ids"`` (information-directed) pulls B_n if N^{B_n}_{n,B_n} <= sum_{t <= n, B_t = B_n}
      beta_t, with beta_t = N_{t,C} / (N_{t,B} + N_{t,C}) (:func:`ids_gaussian_coin`).

    The state is :class:`LeaderTracking`; it starts after the initialisation (each arm once,
    :class:`jaxbandits.rules.sampling.Initial`).  Deterministic given the rewards: ``draws = 0``.

    Attributes:
      epsilon0: the challenger's slack eps0 >= 0 (traced).
      selection: "ids" or "fixed".
      beta: the leader's target proportion of ``selection="fixed"``, in (0, 1) (traced).
    """

    draws: ClassVar[int] = 0
    reads: ClassVar[tuple[str, ...]] = ()
    epsilon0: float = hyperparameter(0.1, low=0.0, low_open=False, traced=True)
    selection: str = "ids"
    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)

    def __post_init__(self):
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")

    def init(self, key, instance: Instance) -> LeaderTracking:
        dt = instance.arms.dtype
        return LeaderTracking(jnp.zeros((instance.num_arms,), dt), jnp.zeros((instance.num_arms,), dt))

    def update(self, keys, state: LeaderTracking, belief: Belief, ctx: Context):
        del keys
        valid = ctx.instance.valid_arms()
        counts = belief.stats.counts
        mu = empirical_means(belief.stats)
        lead = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
        chal = epsilon_tc_challenger(mu, counts, lead, valid, self.epsilon0)
        if self.selection == "ids":
            step = ids_gaussian_coin(counts, lead, chal)
            rounds = state.rounds.at[lead].add(step)
            target = rounds[lead]
        else:
            rounds = state.rounds.at[lead].add(1.0)
            target = self.beta * rounds[lead]
        pull_leader = state.own[lead] <= target
        own = state.own.at[lead].add(pull_leader.astype(state.own.dtype))
        return jnp.where(pull_leader, lead, chal), LeaderTracking(rounds, own)

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "EBTCEpsilon")
        if instance.model != "gaussian":
            raise ValueError(f"EBTCEpsilon (EB-TCε) is for Gaussian arms with known variance, got "
                             f"model={instance.model!r}")


# -- LUCB ----------------------------------------------------------------------------------------------
def kl_bounds(family: str, mu, counts, level, sigma, iters: int = 50):
    """(L, U): the KL confidence bounds min / max {q : N_a d(mu_a, q) <= level} of every arm
    (Kaufmann & Kalyanakrishnan, COLT 2013, KL-LUCB's L_a(t), U_a(t)); Gaussian arms in closed form,
    mu_a -+ sigma sqrt(2 level / N_a); Bernoulli arms by ``iters`` bisection steps (fixed)."""
    n = jnp.maximum(counts, 1.0)
    if family == "gaussian":
        w = sigma * jnp.sqrt(2.0 * level / n)
        return mu - w, mu + w
    target = level / n

    def bisect(lo, hi, upper):
        def body(_, b):
            lo, hi = b
            q = 0.5 * (lo + hi)
            inside = karmed.kl_bernoulli(mu, q) <= target
            if upper:
                return jnp.where(inside, q, lo), jnp.where(inside, hi, q)
            return jnp.where(inside, lo, q), jnp.where(inside, q, hi)
        lo, hi = jax.lax.fori_loop(0, iters, body, (lo, hi))
        return lo if upper else hi

    up = bisect(mu, jnp.ones_like(mu), True)
    low = bisect(jnp.zeros_like(mu), mu, False)
    return low, up


def lucb_pair(family: str, stats: common.LinearStats, level, valid, sigma):
    """(b, c, L_b, U_c): the empirical best arm b and the arm c != b of largest upper bound
    (Kalyanakrishnan et al. 2012, LUCB; with KL bounds, Kaufmann & Kalyanakrishnan 2013)."""
    mu = empirical_means(stats)
    low, up = kl_bounds(family, mu, stats.counts, level, sigma)
    b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
    others = valid & (jnp.arange(mu.shape[0]) != b)
    c = common.argmax_fast(jnp.where(others, up, -jnp.inf))
    return b, c, low[b], up[c]


class LUCBState(NamedTuple):
    challenger: jax.Array   # the second arm of the current round


@dataclasses.dataclass(frozen=True)
class KLLUCB(SamplingRule):
    """KL-LUCB's sampling rule (Kaufmann & Kalyanakrishnan, COLT 2013, Algorithm 2 with the KL
    bounds of :func:`kl_bounds` at level beta(t, delta) of the stopping rule, ``threshold``): each
    round pulls the empirical best arm b_t and the challenger c_t = argmax_{a != b_t} U_a(t), both
    chosen from the data at the start of the round (two engine steps; the second reads the
    challenger from the state).  Pair it with :class:`LUCBStop` (same ``threshold``).

    Attributes:
      threshold: the exploration rate, a name of :data:`jaxbandits.rules.thresholds.ALIASES`
        ``["karmed"]`` (GK16's experiments: ``"heuristic"``).
    """

    reads: ClassVar[tuple[str, ...]] = ()
    threshold: str = "heuristic"

    def __post_init__(self):
        thresholds.resolve("karmed", self.threshold)
        check_pair_threshold(self.threshold, "KLLUCB")

    def init(self, key, instance: Instance) -> LUCBState:
        return LUCBState(jnp.zeros((), jnp.int32))

    def level(self, t, ctx: Context):
        """The exploration rate beta(t, delta) of the bounds after t pulls."""
        return ChernoffGLR(self.threshold)._beta_kl(t, ctx)

    def family(self, ctx: Context) -> str:
        """The divergence of the bounds (KL-LUCB: the instance's)."""
        return ctx.instance.model

    def update(self, keys, state: LUCBState, belief: Belief, ctx: Context):
        instance = ctx.instance
        level = self.level(belief.t, ctx)
        b, c, _, _ = lucb_pair(self.family(ctx), belief.stats, level, instance.valid_arms(), ctx.sigma)
        first = (belief.t - ctx.start) % 2 == 0
        arm = jnp.where(first, b, state.challenger)
        return arm, LUCBState(jnp.where(first, c, state.challenger).astype(jnp.int32))

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "KLLUCB")


@dataclasses.dataclass(frozen=True)
class LUCBStop(StoppingRule):
    """LUCB's stopping rule with KL bounds (Kaufmann & Kalyanakrishnan 2013): stop when
    L_{b_t}(t) > U_{c_t}(t) at the end of a round (after an even number of pulls since the
    initialisation), recommend b_t.  The statistic and the threshold of the
    :class:`~jaxbandits.rules.core.Decision` are L_b and U_c.

    Rounds are counted from the K pulls of the initialisation (each arm once,
    :class:`jaxbandits.rules.sampling.Initial`).

    Attributes:
      threshold: the level beta(t, delta) of the bounds (``"heuristic"``, ``"gk16"``, ``"log_t"``).
    """

    threshold: str = "heuristic"

    def __post_init__(self):
        thresholds.resolve("karmed", self.threshold)
        check_pair_threshold(self.threshold, "LUCBStop")

    prior = ChernoffGLR.prior

    level = KLLUCB.level
    family = KLLUCB.family

    def beta(self, stats, t, ctx: Context):
        level = self.level(t, ctx)
        _, _, _, up = lucb_pair(self.family(ctx), stats, level, ctx.instance.valid_arms(), ctx.sigma)
        return up, self._ready(stats, t, ctx)

    def _ready(self, stats, t, ctx: Context):
        valid = ctx.instance.valid_arms()
        K = ctx.instance.num_arms
        return jnp.all(jnp.where(valid, stats.counts >= 1, True)) & ((t - K) % 2 == 0)

    def decide(self, stats, t, ctx: Context) -> Decision:
        instance = ctx.instance
        level = self.level(t, ctx)
        b, _, low_b, up_c = lucb_pair(self.family(ctx), stats, level, instance.valid_arms(), ctx.sigma)
        mu = empirical_means(stats)
        return Decision(Belief(stats, t, mu, None, None, b.astype(jnp.int32)), low_b, up_c, self._ready(stats, t, ctx))

    def validate(self, instance: Instance) -> None:
        ChernoffGLR(self.threshold).validate(instance)


# -- LUCB1 ---------------------------------------------------------------------------------------------
LUCB1_THRESHOLDS = thresholds.names("lucb1")


def lucb1_round(t, K):
    """The round index of LUCB after t pulls: 1 after the K initial pulls, then one more per pair
    of pulls (Kalyanakrishnan et al. 2012, the LUCB algorithm of Sec 3)."""
    return (t - K) / 2.0 + 1.0


@dataclasses.dataclass(frozen=True)
class LUCB1(KLLUCB):
    """LUCB1's sampling rule (Kalyanakrishnan, Tewari, Auer & Stone, ICML 2012, Sec 3, m = 1,
    epsilon = 0): each round pulls the empirical best arm h_t and the arm l_t != h_t of largest
    upper bound, with Hoeffding's bounds mu_hat_a -+ sigma sqrt(2 beta / N_a) (the paper's
    beta(u, t) = sqrt(ln(k1 K t^4 / delta) / (2u)), k1 = 5/4, for rewards in [0, 1]: sigma = 1/2),
    the level beta = log(5 K t^4 / (4 delta)) at the round index t (:func:`lucb1_round`;
    :func:`jaxbandits.rules.thresholds.lucb1`).  Rounds are two engine steps, as
    :class:`KLLUCB`'s.  Pair it with :class:`LUCB1Stop` (same ``threshold``).

    Attributes:
      threshold: ``"lucb1"`` (the paper's) or ``"heuristic"`` log((1 + log t) / delta), t pulls
        (:data:`jaxbandits.rules.thresholds.ALIASES` ``["lucb1"]``).
    """

    threshold: str = "lucb1"

    def __post_init__(self):
        thresholds.resolve("lucb1", self.threshold)

    def level(self, t, ctx: Context):
        return lucb1_level(self.threshold, t, ctx)

    def family(self, ctx: Context) -> str:
        return "gaussian"  # Hoeffding's bounds: the Gaussian form with the sub-Gaussian sigma

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "LUCB1")


def lucb1_level(threshold: str, t, ctx: Context):
    """beta(t, delta) of LUCB1's bounds: log(5 K t_r^4 / (4 delta)) at the round index t_r of t
    pulls, or log((1 + log t) / delta) (``"heuristic"``)."""
    instance = ctx.instance
    dt = instance.arms.dtype
    t = jnp.asarray(t, dt)
    if thresholds.resolve("lucb1", threshold) == "log_log_t":
        return thresholds.log_log_t(jnp.maximum(t, 1.0), ctx.delta)
    K = jnp.asarray(instance.true_num_arms(), dt)
    return thresholds.lucb1(jnp.maximum(lucb1_round(t, K), 1.0), ctx.delta, K)


@dataclasses.dataclass(frozen=True)
class LUCB1Stop(LUCBStop):
    """LUCB1's stopping rule (Kalyanakrishnan et al. 2012, Sec 3, epsilon = 0): stop at the end of
    a round when L_{h_t}(t) > U_{l_t}(t) with the Hoeffding bounds of :class:`LUCB1`, recommend h_t.

    Attributes:
      threshold: ``"lucb1"`` or ``"heuristic"`` (as :class:`LUCB1`'s).
    """

    threshold: str = "lucb1"

    def __post_init__(self):
        thresholds.resolve("lucb1", self.threshold)

    level = LUCB1.level
    family = LUCB1.family

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "LUCB1Stop")


# -- lil'UCB -----------------------------------------------------------------------------------------
def lil_width(counts, delta, eps, beta, sigma):
    """lil'UCB's confidence width (Jamieson, Malloy, Nowak & Bubeck, COLT 2014, Algorithm 1):

    (1 + beta) (1 + sqrt(eps)) sigma sqrt(2 (1 + eps) log(log((1 + eps) T) / delta) / T),

    T = N_a pulls of the arm, ``delta`` the algorithm's parameter in the bound.  Where
    log((1 + eps) T) <= delta (the outer logarithm not positive: the formula is undefined, e.g.
    T = 1 with eps = 0) the width is +inf, as in the public implementations of the heuristic
    (banditpylib's ``LilUCBHeuristic``); with delta < log(1 + eps) / e, the range of the paper's
    guarantee, this never happens."""
    T = jnp.maximum(counts, 1.0)
    inner = jnp.log((1.0 + eps) * T)
    ok = inner > delta
    loglog = jnp.log(jnp.where(ok, inner, 2.0 * delta) / delta)
    w = (1.0 + beta) * (1.0 + jnp.sqrt(eps)) * sigma * jnp.sqrt(2.0 * (1.0 + eps) * loglog / T)
    return jnp.where(ok, w, jnp.inf)


@dataclasses.dataclass(frozen=True)
class LilUCB(SamplingRule):
    """lil'UCB's sampling rule (Jamieson et al., COLT 2014, Algorithm 1): pull
    argmax_a mu_hat_a + :func:`lil_width` (N_a), the bound's parameter delta' = ``delta_factor``
    delta (the first of the maxima).  Deterministic.  Pair it with :class:`LilUCBStop`.

    Attributes:
      eps: epsilon of the bound (the paper's experiments: 0.01; the heuristic: 0).
      beta: beta of the bound (1; the heuristic: 1/2).
      delta_factor: delta' / delta (1; the heuristic: 1/5).
    """

    reads: ClassVar[tuple[str, ...]] = ()
    eps: float = hyperparameter(0.01, low=0.0, low_open=False, traced=True)
    beta: float = hyperparameter(1.0, low=0.0, traced=True)
    delta_factor: float = hyperparameter(1.0, low=0.0, high=1.0, high_open=False, traced=True)

    def width(self, counts, ctx: Context):
        return lil_width(counts, self.delta_factor * ctx.delta, self.eps, self.beta, ctx.sigma)

    def update(self, keys, state, belief: Belief, ctx: Context):
        valid = ctx.instance.valid_arms()
        ucb = empirical_means(belief.stats) + self.width(belief.stats.counts, ctx)
        return common.argmax_fast(jnp.where(valid, ucb, -jnp.inf)).astype(jnp.int32), state

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "LilUCB")


@dataclasses.dataclass(frozen=True)
class LilUCBStop(StoppingRule):
    """lil'UCB's stopping rule (Jamieson et al., COLT 2014, Algorithm 1): stop as soon as some arm
    has N_a(t) >= 1 + lambda sum_{b != a} N_b(t), and recommend the most pulled arm; lambda =
    ``lam`` + ``lam_per_arm`` / K (the paper: ((2 + beta) / beta)^2; its heuristic: 1 + 10 / K).

    The :class:`~jaxbandits.rules.core.Decision`'s statistic is max_a N_a - lambda sum_{b != a}
    N_b and its threshold the largest float below 1 (so that ``statistic > beta`` is ``>= 1``).

    Attributes:
      lam: the constant part of lambda.
      lam_per_arm: the part of lambda divided by the number of arms K.
    """

    lam: float = hyperparameter(9.0, low=0.0, traced=True)
    lam_per_arm: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)

    prior = ChernoffGLR.prior

    def _lambda(self, ctx: Context):
        K = jnp.asarray(ctx.instance.true_num_arms(), ctx.instance.arms.dtype)
        return self.lam + self.lam_per_arm / K

    def beta(self, stats, t, ctx: Context):
        dt = ctx.instance.arms.dtype
        return jnp.nextafter(jnp.ones((), dt), jnp.zeros((), dt)), jnp.ones((), bool)

    def decide(self, stats, t, ctx: Context) -> Decision:
        valid = ctx.instance.valid_arms()
        counts = jnp.where(valid, stats.counts, 0.0)
        lead = common.argmax_fast(jnp.where(valid, counts, -jnp.inf))
        total = jnp.sum(counts)
        z = counts[lead] - self._lambda(ctx) * (total - counts[lead])
        beta, ready = self.beta(stats, t, ctx)
        mu = empirical_means(stats)
        return Decision(Belief(stats, t, mu, None, None, lead.astype(jnp.int32)), z, beta, ready)

    def validate(self, instance: Instance) -> None:
        check_k_armed(instance, "LilUCBStop")


# -- Gaussian arms with per-arm variances, known or unknown --------------------------------------------
#: where the rules read the arms' variances: ``"known"`` (the instance's sigma_a^2, or the common
#: sigma^2) or ``"empirical"`` (the per-arm empirical variances, the plug-in approach of Jourdan,
#: Degenne & Kaufmann, ALT 2023)
VARIANCES = ("known", "empirical")
#: the smallest empirical variance used (a floor, as in the C port of the authors' code: 1e-10)
MIN_VARIANCE = 1e-10


class SquaresCarry(NamedTuple):
    """What an empirical-variance stopping rule keeps from one pull to the next
    (``Belief.carry``)."""

    squares: jax.Array   # [K] sum of the squared rewards of each arm


def empirical_variances(stats: common.LinearStats, squares: jax.Array) -> jax.Array:
    """[K] sigma_hat_a^2 = S2_a / N_a - mu_hat_a^2 (the maximum-likelihood, 1 / N_a, estimate),
    floored at :data:`MIN_VARIANCE`; 1 where N_a = 0."""
    n = jnp.maximum(stats.counts, 1.0)
    mu = stats.sums / n
    var = jnp.maximum(squares / n - mu * mu, MIN_VARIANCE)
    return jnp.where(stats.counts > 0, var, 1.0)


def arm_variances(source: str, stats: common.LinearStats, carry, ctx: Context) -> jax.Array:
    """[K] the variances the rules use: the known sigma_a^2 (the instance's ``arm_noise``, else
    the composition's sigma on every arm) or the empirical ones (from the stopping rule's
    :class:`SquaresCarry`)."""
    instance = ctx.instance
    if source == "known":
        if instance.arm_noise is not None:
            return instance.arm_noise ** 2
        return jnp.broadcast_to(ctx.sigma ** 2, (instance.num_arms,)).astype(instance.arms.dtype)
    if not isinstance(carry, SquaresCarry):
        raise TypeError("variances='empirical' reads the per-arm sums of squared rewards that an empirical-variance "
                        "stopping rule keeps (GaussianGLR(variances='empirical') or UnknownVarianceGLR); got the "
                        f"carry {type(carry).__name__} of another stopping rule")
    return empirical_variances(stats, carry.squares)


def check_variances(variances) -> None:
    if variances not in VARIANCES:
        raise ValueError(f"variances must be one of {VARIANCES}, got {variances!r}")


def check_gaussian(instance: Instance, who: str) -> None:
    """Refuse a K-armed instance that is not Gaussian (host side)."""
    check_k_armed(instance, who)
    if instance.model != "gaussian":
        raise ValueError(f"{who} is for Gaussian arms (per-arm variances), got model={instance.model!r}")


@dataclasses.dataclass(frozen=True)
class InitialRounds(SamplingRule):
    """Pull every arm ``rounds`` times (arm t mod K at pull t < rounds K), then follow ``then``
    (``ctx.start`` = rounds K).  Two rounds give every arm the two samples that its empirical
    variance needs (the initialisation of the code of Jourdan, Degenne & Kaufmann, ALT 2023, as
    its C port reads it: two samples of each arm before the first decision).

    Attributes:
      then: the sampling rule that takes over.
      rounds: pulls of each arm (static).
    """

    then: SamplingRule = None
    rounds: int = 2

    def __post_init__(self):
        if not isinstance(self.then, SamplingRule):
            raise TypeError(f"InitialRounds.then must be a sampling rule, got {self.then!r}")
        if int(self.rounds) < 1:
            raise ValueError(f"InitialRounds.rounds must be >= 1, got {self.rounds!r}")

    @property
    def draws(self) -> int:
        return self.then.draws

    @property
    def reads(self) -> tuple[str, ...]:
        return self.then.reads

    @property
    def supports_arm_noise(self) -> bool:
        return bool(getattr(self.then, "supports_arm_noise", False))

    def initial_pulls(self, instance: Instance) -> int:
        return int(self.rounds) * instance.num_arms

    def init(self, key, instance: Instance):
        return self.then.init(key, instance)

    def update(self, keys, state, belief: Belief, ctx: Context):
        n0 = self.initial_pulls(ctx.instance)
        arm, then = self.then.update(keys, state, belief, ctx._replace(start=n0))
        warm = belief.t < n0
        arm = jnp.where(warm, belief.t % ctx.instance.num_arms, arm)
        then = jax.tree.map(lambda old, new: jnp.where(warm, old, new), state, then)
        return arm, then

    def converged(self, state):
        return self.then.converged(state)

    def validate(self, instance: Instance) -> None:
        self.then.validate(instance)


def plug_in_statistic(mu, counts, var, valid):
    """(Z(t), b): the empirical best arm b and min_{a != b} (mu_b - mu_a)^2 / (2 (var_b / N_b +
    var_a / N_a)) (:func:`jaxbandits.design.karmed.heteroscedastic_pair_cost`), 0 when another arm
    ties with b."""
    b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
    cost = karmed.heteroscedastic_pair_cost(mu[b], mu, counts[b], counts, var[b], var)
    others = valid & (jnp.arange(mu.shape[0]) != b)
    return jnp.min(jnp.where(others, cost, jnp.inf)), b


def _beta_unknown_variance(threshold: str, t, ctx: Context):
    t = jnp.maximum(jnp.asarray(t, ctx.instance.arms.dtype), 1.0)
    if thresholds.resolve("unknown_variance", threshold) == "log_t":
        return thresholds.log_t(t, ctx.delta)
    return thresholds.log_log_t(t, ctx.delta)


def calibrated_margin(cost, c, others, counts, valid, ctx: Context):
    """min_{a != b} (cost_a - c_a), c_a the calibrated threshold of the pair (b, a)
    (:func:`jaxbandits.rules.thresholds.uv_pair_threshold`): the calibrated stopping rule stops when
    every pair's GLR exceeds its own threshold, i.e. when this margin is > 0; -inf until every
    arm's count is past :func:`jaxbandits.rules.thresholds.uv_valid_count` (the thresholds are
    +inf before)."""
    K = jnp.sum(valid).astype(counts.dtype)
    ok = jnp.all(jnp.where(valid, thresholds.uv_valid_count(counts, ctx.delta, K), True))
    margin = jnp.min(jnp.where(others, cost - c, jnp.inf))
    return jnp.where(ok, margin, -jnp.inf)


def check_calibrated(threshold: str, variances: str, who: str | None = None) -> None:
    """The calibrated thresholds are for empirical variances only (host side)."""
    if threshold == "calibrated" and variances != "empirical":
        raise ValueError(("" if who is None else f"{who}: ") + "threshold='calibrated' (the calibrated thresholds "
                         f"of unknown variances) needs variances='empirical', got variances={variances!r}; with "
                         "known variances use threshold='heuristic' or 'log_t'")


@dataclasses.dataclass(frozen=True)
class GaussianGLR(StoppingRule):
    """The GLR stopping rule of Gaussian arms with per-arm variances: stop when

        Z(t) = min_{a != b} (mu_hat_b - mu_hat_a)^2 / (2 (s_b^2 / N_b + s_a^2 / N_a)) > beta(t, delta),

    b the empirical best arm (recommended), s_a^2 = sigma_a^2 (``variances="known"``: Chernoff's
    GLR of Gaussian arms with known variances, Garivier & Kaufmann 2016, Sec 3.2, with per-arm
    divergences) or the empirical variance sigma_hat_a^2 (``variances="empirical"``: the EV-GLR
    stopping rule of Jourdan, Degenne & Kaufmann, "Dealing with unknown variances in best-arm
    identification", ALT 2023, which plugs the empirical variances into the known-variance GLR).
    The form is the one of the C port of the authors' Julia code (jvc56/MAGPIE,
    ``src/impl/bai_peps.c``: ``bai_glrt`` with ``bai_dKV`` and the alternative at the
    precision-weighted mean ``alt_λ_KV``), sigma_hat_a^2 = S2_a / N_a - mu_hat_a^2 (``bai.c``,
    floored at 1e-10).  Not read in the paper itself: its equation numbers; its calibrated
    thresholds are ``threshold="calibrated"`` (below).

    With ``"empirical"`` the per-arm sums of squared rewards are the rule's carry
    (:class:`SquaresCarry`, updated from each pull in ``advance``), and the rule is ready once
    every arm has two samples.  Statistic and threshold are in KL units.

    ``threshold="calibrated"`` (empirical variances only): the calibrated thresholds of the paper,
    one per pair, as the C port writes them (``HT`` with ``is_EV_GLR``,
    :func:`jaxbandits.rules.thresholds.uv_pair_threshold`): stop when every a != b has
    Z_a(t) > (N_b r(N_b) + N_a r(N_a)) / 2 and every arm's count is past
    :func:`jaxbandits.rules.thresholds.uv_valid_count`; the decision's statistic is then the margin
    min_a (Z_a(t) - c_a) and its threshold 0 (:func:`calibrated_margin`).

    Attributes:
      variances: "known" or "empirical".
      threshold: "heuristic" log((1 + log t) / delta), "log_t" log((t + 1) / delta) or
        "calibrated" (empirical variances).
    """

    variances: str = "empirical"
    threshold: str = "heuristic"

    supports_arm_noise: ClassVar[bool] = True
    #: the statistic's name in :func:`jaxbandits.rules.thresholds.uv_pair_threshold`
    calibrated_statistic: ClassVar[str] = "ev_glr"

    def __post_init__(self):
        check_variances(self.variances)
        thresholds.resolve("unknown_variance", self.threshold)
        check_calibrated(self.threshold, self.variances, type(self).__name__)

    def prior(self, instance: Instance) -> Belief:
        dt = instance.arms.dtype
        carry = SquaresCarry(jnp.zeros((instance.num_arms,), dt)) if self.variances == "empirical" else ()
        return Belief(common.init_stats(instance), jnp.zeros((), jnp.int32), jnp.zeros((instance.num_arms,), dt),
                      None, None, jnp.zeros((), jnp.int32), carry)

    def _min_count(self) -> float:
        return 2.0 if self.variances == "empirical" else 1.0

    def beta(self, stats, t, ctx: Context):
        valid = ctx.instance.valid_arms()
        ready = jnp.all(jnp.where(valid, stats.counts >= self._min_count(), True))
        return _beta_unknown_variance(self.threshold, t, ctx), ready

    def statistic(self, mu, counts, var, valid):
        """(Z(t), b) (class docstring)."""
        return plug_in_statistic(mu, counts, var, valid)

    def pair_costs(self, mu, counts, var, valid):
        """([K] the GLR of each pair (b, a), b, [K] the arms a != b)."""
        b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
        cost = karmed.heteroscedastic_pair_cost(mu[b], mu, counts[b], counts, var[b], var)
        return cost, b, valid & (jnp.arange(mu.shape[0]) != b)

    def calibrated_thresholds(self, counts, b, valid, ctx: Context):
        """[K] c(N_b, N_a, delta) of every pair (b, a)
        (:func:`jaxbandits.rules.thresholds.uv_pair_threshold`, K the real arms)."""
        K = jnp.sum(valid).astype(counts.dtype)
        return thresholds.uv_pair_threshold(counts[b], counts, ctx.delta, K, self.calibrated_statistic)

    def decide_with(self, stats, t, ctx: Context, carry) -> Decision:
        mu = empirical_means(stats)
        var = arm_variances(self.variances, stats, carry, ctx)
        valid = ctx.instance.valid_arms()
        if self.threshold == "calibrated":
            cost, b, others = self.pair_costs(mu, stats.counts, var, valid)
            z = calibrated_margin(cost, self.calibrated_thresholds(stats.counts, b, valid, ctx), others,
                                  stats.counts, valid, ctx)
            ready = jnp.all(jnp.where(valid, stats.counts >= self._min_count(), True))
            return Decision(Belief(stats, t, mu, None, None, b.astype(jnp.int32), carry), z,
                            jnp.zeros((), z.dtype), ready)
        z, b = self.statistic(mu, stats.counts, var, valid)
        beta, ready = self.beta(stats, t, ctx)
        return Decision(Belief(stats, t, mu, None, None, b.astype(jnp.int32), carry), z, beta, ready)

    def decide(self, stats, t, ctx: Context) -> Decision:
        if self.variances == "empirical":
            raise TypeError("GaussianGLR(variances='empirical') keeps the squared rewards pull by pull: "
                            "call advance with the pull")
        return self.decide_with(stats, t, ctx, ())

    def advance(self, belief: Belief, stats, t, ctx: Context, pulled=None) -> Decision:
        carry = belief.carry
        if self.variances == "empirical":
            if pulled is None:
                raise ValueError("the empirical variances need every reward: a sampling rule with initial_counts "
                                 "(rewards drawn as per-arm sums) cannot be paired with GaussianGLR("
                                 "variances='empirical'); use InitialRounds")
            arm, reward = pulled
            carry = SquaresCarry(carry.squares.at[arm].add(reward * reward))
        return self.decide_with(stats, t, ctx, carry)

    def validate(self, instance: Instance) -> None:
        check_gaussian(instance, type(self).__name__)


def _uv_cost(u, mu_b, mu_a, n_b, n_a, v_b, v_a):
    return 0.5 * n_b * jnp.log1p((mu_b - u) ** 2 / v_b) + 0.5 * n_a * jnp.log1p((mu_a - u) ** 2 / v_a)


def _uv_slope(u, mu_b, mu_a, n_b, n_a, v_b, v_a):
    """(f'(u), f''(u)) of :func:`_uv_cost` in u."""
    db, da = u - mu_b, u - mu_a
    qb, qa = v_b + db * db, v_a + da * da
    f1 = n_b * db / qb + n_a * da / qa
    f2 = n_b * (v_b - db * db) / (qb * qb) + n_a * (v_a - da * da) / (qa * qa)
    return f1, f2


def unknown_variance_pair_cost(mu_b, mu_a, n_b, n_a, v_b, v_a, grid: int = 16, newton: int = 12):
    """inf_{u in [mu_a, mu_b]} N_b / 2 log(1 + (mu_b - u)^2 / v_b) + N_a / 2 log(1 + (mu_a - u)^2 / v_a)
    where mu_b > mu_a (0 otherwise): the GLR of "mu_b >= mu_a" against "mu_b <= mu_a" for Gaussian arms
    of unknown variances, v the empirical (maximum-likelihood) variances (for each arm the variance
    that maximises the likelihood under mean u is v + (mu_hat - u)^2).  The function of u need not be
    convex (its stationary points are the real roots of a cubic, which the C port of the authors'
    code solves): minimised here on ``grid`` points of [mu_a, mu_b], then by ``newton`` safeguarded
    Newton steps on its derivative in the bracket of the two grid cells around the best point, the
    ends kept as candidates (fixed trip counts)."""
    dt = jnp.result_type(mu_b, mu_a)
    lo, hi = jnp.minimum(mu_a, mu_b), jnp.maximum(mu_a, mu_b)
    z = jnp.linspace(0.0, 1.0, grid, dtype=dt)
    us = lo[..., None] + (hi - lo)[..., None] * z
    args = tuple(jnp.asarray(a, dt)[..., None] for a in (mu_b, mu_a, n_b, n_a, v_b, v_a))
    f = _uv_cost(us, *args)
    i = jnp.argmin(f, axis=-1)
    h = (hi - lo) / (grid - 1)
    a = jnp.maximum(lo, lo + (i - 1) * h)
    b = jnp.minimum(hi, lo + (i + 1) * h)
    u = lo + i * h
    args1 = tuple(jnp.asarray(x, dt) for x in (mu_b, mu_a, n_b, n_a, v_b, v_a))

    def body(_, c):
        u, a, b, low = c
        low = jnp.minimum(low, _uv_cost(u, *args1))
        f1, f2 = _uv_slope(u, *args1)
        a, b = jnp.where(f1 < 0, u, a), jnp.where(f1 < 0, b, u)
        step = u - f1 / jnp.where(f2 > 0, f2, jnp.inf)
        ok = (step >= a) & (step <= b) & (f2 > 0)
        return jnp.where(ok, step, 0.5 * (a + b)), a, b, low

    u, _, _, low = jax.lax.fori_loop(0, newton, body, (u, a, b, jnp.min(f, axis=-1)))
    best = jnp.minimum(low, _uv_cost(u, *args1))
    return jnp.where(mu_b > mu_a, best, 0.0)


@dataclasses.dataclass(frozen=True)
class UnknownVarianceGLR(GaussianGLR):
    """The GLR stopping rule of Gaussian arms with unknown variances (Jourdan, Degenne & Kaufmann,
    ALT 2023, the approach that adapts the transportation costs): stop when

        Z(t) = min_{a != b} inf_{u in [mu_hat_a, mu_hat_b]} N_b / 2 log(1 + (mu_hat_b - u)^2 / sigma_hat_b^2)
                                                       + N_a / 2 log(1 + (mu_hat_a - u)^2 / sigma_hat_a^2)

    exceeds beta(t, delta), b the empirical best arm (:func:`unknown_variance_pair_cost`).  The
    divergence (1/2) log(1 + (mu - u)^2 / sigma^2) and the minimisation over u are those of the C
    port of the authors' code (jvc56/MAGPIE, ``src/impl/bai_peps.c``: ``bai_dUV``, ``alt_λ_UV``);
    the paper's own equation was not read.  Empirical variances and readiness as
    :class:`GaussianGLR` with ``variances="empirical"``.

    ``threshold="calibrated"``: the paper's calibrated per-pair thresholds for this statistic as the
    C port writes them (``HT`` without ``is_EV_GLR``: (N_b log(1 + r(N_b)) + N_a log(1 + r(N_a))) / 2,
    :func:`jaxbandits.rules.thresholds.uv_pair_threshold`), as :class:`GaussianGLR`'s.

    Attributes:
      threshold: "heuristic", "log_t" or "calibrated".
      grid, newton: the minimisation's grid points and Newton steps (static).
    """

    variances: str = "empirical"
    threshold: str = "heuristic"
    grid: int = hyperparameter(16, count=3)
    newton: int = hyperparameter(12, count=1)

    calibrated_statistic: ClassVar[str] = "glr"

    def __post_init__(self):
        if self.variances != "empirical":
            raise ValueError(f"UnknownVarianceGLR reads the empirical variances: variances must be 'empirical', "
                             f"got {self.variances!r}")
        thresholds.resolve("unknown_variance", self.threshold)

    def pair_costs(self, mu, counts, var, valid):
        b = common.argmax_fast(jnp.where(valid, mu, -jnp.inf))
        cost = unknown_variance_pair_cost(mu[b], mu, counts[b], counts, var[b], var, int(self.grid), int(self.newton))
        return cost, b, valid & (jnp.arange(mu.shape[0]) != b)

    def statistic(self, mu, counts, var, valid):
        cost, b, others = self.pair_costs(mu, counts, var, valid)
        return jnp.min(jnp.where(others, cost, jnp.inf)), b
