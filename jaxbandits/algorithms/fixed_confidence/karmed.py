"""Track-and-Stop for K-armed bandits in a one-parameter exponential family (Gaussian with known
variance, Bernoulli), with Chernoff's GLR stopping rule.

Source: Garivier & Kaufmann, "Optimal Best Arm Identification with Fixed Confidence", COLT 2016
(arXiv 1602.04589): Sec 3.1 (D- and C-tracking of w*(mu_hat(t)) with forced exploration), Sec 3.2
(Chernoff's stopping rule), Sec 6 (experiments: initialisation by one pull of each arm, threshold
beta(t, delta) = log((log t + 1) / delta)); the authors' released Julia code (``TrackAndStop``:
D-tracking with the forced exploration min_a N_a(t) <= max(sqrt(t) - K/2, 0) and ties among the
empirical best arms broken at random by pulling one of them).

EB-TCε (epsilon-best-arm identification, Jourdan, Degenne & Kaufmann, NeurIPS 2023) is
:class:`KArmedEBTCEpsilon`.

The algorithm is a composition (:func:`jaxbandits.rules.compose`) of
:class:`jaxbandits.rules.sampling.Initial` (each arm once) around
:class:`jaxbandits.rules.karmed.TrackAndStop` and :class:`jaxbandits.rules.karmed.ChernoffGLR`;
:meth:`KArmedTrackAndStop.rules` says which.  The instance is a K-armed bandit
(:func:`jaxbandits.instances.k_armed`, :func:`jaxbandits.instances.garivier_kaufmann_2016`); the
lower bound is T*(mu) kl(delta, 1 - delta) (:func:`jaxbandits.design.karmed.lower_bound`).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, hyperparameter
from jaxbandits.environment import pull_counts_fixed
from jaxbandits.instances.base import Instance
from jaxbandits.rules import karmed, sampling
from jaxbandits.rules.composition import Composed, Composition


@dataclasses.dataclass(frozen=True)
class KArmedTrackAndStop(Composed):
    """Track-and-Stop with Chernoff's stopping rule on a K-armed bandit (module docstring).

    Attributes:
      delta: confidence level.
      tracking: "D" (D-tracking with forced exploration, the paper's experiments) or "C"
        (C-tracking of the eps_t-projected weights).
      threshold: "heuristic" log((log t + 1) / delta) (Sec 6), "gk16" log(2 t (K - 1) / delta)
        (Bernoulli arms, delta-correct, Sec 4), "log_t", or "kaufmann_koolen" (Gaussian arms,
        delta-correct: :func:`jaxbandits.rules.thresholds.kaufmann_koolen`); with
        ``variances="empirical"`` also
        "calibrated" (the calibrated per-pair thresholds of Jourdan, Degenne & Kaufmann, ALT 2023,
        for the EV-GLR or the GLR: :func:`jaxbandits.rules.thresholds.uv_pair_threshold`).
      outer, inner: trip counts of the w* solver (static).
      solver_tol: relative certified gap of w* above which a run is reported not converged.
      sigma: the Gaussian noise scale (None: the instance's); unused with Bernoulli rewards.
      variances: None (one-parameter family, the divergence with ``sigma``), or for Gaussian arms
        with per-arm variances (an instance with ``arm_noise``, or one sigma): "known" (the
        instance's sigma_a^2: Track-and-Stop with heteroscedastic w* and the known-variance GLR,
        :class:`jaxbandits.rules.karmed.GaussianGLR`) or "empirical" (unknown variances: the
        plug-in approach of Jourdan, Degenne & Kaufmann, ALT 2023, the empirical variances in w*
        and in the stopping rule; each arm pulled twice first, :class:`jaxbandits.rules.karmed.InitialRounds`).
      statistic: with ``variances="empirical"``: "plug-in" (the EV-GLR,
        :class:`jaxbandits.rules.karmed.GaussianGLR`) or "glr" (the GLR with unknown variances,
        :class:`jaxbandits.rules.karmed.UnknownVarianceGLR`).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    tracking: str = "D"
    threshold: str = "heuristic"
    outer: int = hyperparameter(12, count=1)
    inner: int = hyperparameter(8, count=1)
    solver_tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    variances: str | None = None
    statistic: str = "plug-in"

    def __post_init__(self):
        if self.tracking not in karmed.TRACKINGS:
            raise ValueError(f"tracking must be one of {karmed.TRACKINGS}, got {self.tracking!r}")
        check_variance_options(self.variances, self.statistic, self.threshold)

    def rules(self) -> Composition:
        """The composition these options make (module docstring)."""
        rule = karmed.TrackAndStop(tracking=self.tracking, outer=self.outer, inner=self.inner,
                                   solver_tol=self.solver_tol, variances=self.variances)
        if self.variances is None:
            return Composition(sampling.Initial(rule, first="all"), karmed.ChernoffGLR(threshold=self.threshold),
                               delta=self.delta, sigma=self.sigma, name=f"Track-and-Stop ({self.tracking})")
        init, stop, tag = variance_rules(rule, self.variances, self.statistic, self.threshold)
        return Composition(init, stop, delta=self.delta, sigma=self.sigma,
                           name=f"Track-and-Stop ({self.tracking}, {tag})")


#: the stopping statistics of Gaussian arms with unknown variances (``statistic=``)
STATISTICS = ("plug-in", "glr")


def check_variance_options(variances, statistic, threshold) -> None:
    """Host-side checks of ``variances``, ``statistic`` and ``threshold`` together."""
    if variances is None:
        karmed.thresholds.resolve("karmed", threshold)
        return
    karmed.check_variances(variances)
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if statistic == "glr" and variances != "empirical":
        raise ValueError("statistic='glr' (the GLR with unknown variances) needs variances='empirical', "
                         f"got variances={variances!r}")
    karmed.thresholds.resolve("unknown_variance", threshold)
    karmed.check_calibrated(threshold, variances)


def variance_rules(rule, variances: str, statistic: str, threshold: str):
    """(initialisation around ``rule``, stopping rule, label) of a composition with per-arm
    variances: known variances: each arm once and :class:`jaxbandits.rules.karmed.GaussianGLR`;
    empirical ones: each arm twice, and the EV-GLR or the unknown-variance GLR."""
    if variances == "known":
        return sampling.Initial(rule, first="all"), karmed.GaussianGLR("known", threshold), "known variances"
    stop = (karmed.UnknownVarianceGLR(threshold=threshold) if statistic == "glr"
            else karmed.GaussianGLR("empirical", threshold))
    return karmed.InitialRounds(rule, 2), stop, ("GLR" if statistic == "glr" else "EV-GLR")


@dataclasses.dataclass(frozen=True)
class KArmedTopTwo(Composed):
    """Top Two with Chernoff's stopping rule on a K-armed bandit: EB-TC (``leader="EB"``, Jourdan
    et al., "Top Two algorithms revisited", NeurIPS 2022), T3C (``leader="TS"``, Shang et al.,
    AISTATS 2020) or TTTS (``leader="TS", challenger="TS"``, Russo 2016), each arm pulled once first
    (:class:`jaxbandits.rules.karmed.TopTwo`).

    Attributes:
      delta: confidence level.
      leader: "EB" (empirical best) or "TS" (Thompson sampling).
      beta: the leader's probability (1/2 in the papers' experiments).
      challenger: "TC" (transportation cost), "TCI" (the transportation cost penalized by
        log N_a, EB-TCI: ``leader="EB"``) or "TS" (TTTS's re-sampling).
      selection: "fixed" (the leader pulled with probability ``beta``) or "ids" (information-directed
        selection, You et al., ICML 2023: :func:`jaxbandits.rules.karmed.ids_coin`).
      grid: quadrature points of TTTS's challenger probabilities (static).
      threshold: as :class:`KArmedTrackAndStop`'s.
      sigma: the Gaussian noise scale (None: the instance's).
      beta_sampler: the Thompson leader's Beta draws on Bernoulli arms, ``"rejection"``
        (``jax.random.beta``) or ``"bounded"`` (a fixed number of operations per step,
        :func:`jaxbandits.rules.karmed.beta_bounded`).
      variances, statistic: as :class:`KArmedTrackAndStop`'s (the plug-in EB-TC / T3C of Jourdan,
        Degenne & Kaufmann, ALT 2023, with ``variances="empirical"``).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    leader: str = "EB"
    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)
    challenger: str = "TC"
    grid: int = hyperparameter(256, count=8)
    threshold: str = "heuristic"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    beta_sampler: str = "rejection"
    variances: str | None = None
    statistic: str = "plug-in"
    selection: str = "fixed"

    def __post_init__(self):
        if self.beta_sampler not in karmed.BETA_SAMPLERS:
            raise ValueError(f"beta_sampler must be one of {karmed.BETA_SAMPLERS}, got {self.beta_sampler!r}")
        if self.leader not in karmed.LEADERS:
            raise ValueError(f"leader must be one of {karmed.LEADERS}, got {self.leader!r}")
        if self.challenger not in karmed.CHALLENGERS:
            raise ValueError(f"challenger must be one of {karmed.CHALLENGERS}, got {self.challenger!r}")
        check_variance_options(self.variances, self.statistic, self.threshold)
        karmed.check_top_two_options(self.leader, self.challenger, self.selection, self.variances)

    def rules(self) -> Composition:
        name = {("EB", "TC"): "EB-TC", ("TS", "TC"): "T3C", ("TS", "TS"): "TTTS", ("EB", "TCI"): "EB-TCI"}.get(
            (self.leader, self.challenger), f"Top Two ({self.leader}, {self.challenger})")
        if self.selection == "ids":
            name = f"{name} (IDS)"
        rule = karmed.TopTwo(leader=self.leader, beta=self.beta, challenger=self.challenger, grid=self.grid,
                             beta_sampler=self.beta_sampler, variances=self.variances, selection=self.selection)
        if self.variances is not None:
            init, stop, tag = variance_rules(rule, self.variances, self.statistic, self.threshold)
            return Composition(init, stop, delta=self.delta, sigma=self.sigma, name=f"{name} ({tag})")
        return Composition(sampling.Initial(rule, first="all"),
                           karmed.ChernoffGLR(threshold=self.threshold), delta=self.delta, sigma=self.sigma,
                           name=name)


#: the thresholds of EB-TCε's epsilon-GLR (Gaussian arms): ``"heuristic"`` (the paper's
#: experiments), ``"kaufmann_koolen"`` (delta-correct under any sampling rule) and ``"log_t"``
EPSILON_THRESHOLDS = ("heuristic", "kaufmann_koolen", "log_t")


@dataclasses.dataclass(frozen=True)
class KArmedEBTCEpsilon(Composed):
    """EB-TCε (Jourdan, Degenne & Kaufmann, "An epsilon-Best-Arm Identification Algorithm for
    Fixed-Confidence and Beyond", NeurIPS 2023, arXiv 2305.16041) on a K-armed Gaussian bandit with
    known variance sigma^2: epsilon-best-arm identification, an answer a being correct when
    mu_a >= max_b mu_b - epsilon.  Written from the paper's algorithm description (its equations,
    not released code; equation numbers are not cited).

    Each arm pulled once; then the empirical best leader, the challenger of slack eps0
    (:func:`jaxbandits.rules.karmed.epsilon_tc_challenger`) and the deterministic selection by K
    tracking procedures, one per leader (:class:`jaxbandits.rules.karmed.EBTCEpsilon`); the run
    stops when the epsilon-GLR of the empirical best arm exceeds the threshold
    (:class:`jaxbandits.rules.karmed.ChernoffGLR` with the composition's ``epsilon``,
    :func:`jaxbandits.rules.karmed.epsilon_glr_statistic`) and recommends that arm.  The engine
    counts an epsilon-good answer as correct (the composition's slack).  The lower bound is
    T_eps(mu) kl(delta, 1 - delta) (:func:`jaxbandits.design.karmed.epsilon_lower_bound`).

    Attributes:
      delta: confidence level.
      epsilon: the slack eps >= 0 of the answers and of the stopping rule (0.1 in the paper's
        experiments; 0: best-arm identification with EB-TC's challenger order).
      epsilon0: the challenger's slack eps0 >= 0 (None: ``epsilon``).
      selection: "ids" (information-directed, beta_n = N_C / (N_B + N_C), the recommended
        default) or "fixed" (the target proportion ``beta``).
      beta: the leader's target proportion of ``selection="fixed"``, in (0, 1).
      threshold: "heuristic" log((1 + log t) / delta) (the paper's experiments), "kaufmann_koolen"
        (delta-correct for any sampling rule, :func:`jaxbandits.rules.thresholds.kaufmann_koolen`)
        or "log_t" log((t + 1) / delta).
      sigma: the Gaussian noise scale (None: the instance's).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    epsilon: float = hyperparameter(0.1, low=0.0, low_open=False, traced=True)
    epsilon0: float | None = hyperparameter(None, low=0.0, low_open=False, traced=True)
    selection: str = "ids"
    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)
    threshold: str = "heuristic"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    def __post_init__(self):
        if self.selection not in karmed.SELECTIONS:
            raise ValueError(f"selection must be one of {karmed.SELECTIONS}, got {self.selection!r}")
        if self.threshold not in EPSILON_THRESHOLDS:
            raise ValueError(f"threshold must be one of {EPSILON_THRESHOLDS} (Gaussian arms), got {self.threshold!r}")

    def validate(self, instance: Instance) -> None:
        karmed.check_k_armed(instance, "KArmedEBTCEpsilon")
        if instance.model != "gaussian":
            raise ValueError(f"KArmedEBTCEpsilon (EB-TCε) is for Gaussian arms with known variance, got "
                             f"model={instance.model!r}")
        super().validate(instance)

    def rules(self) -> Composition:
        """The composition these options make (class docstring)."""
        eps0 = self.epsilon if self.epsilon0 is None else self.epsilon0
        rule = karmed.EBTCEpsilon(epsilon0=eps0, selection=self.selection, beta=self.beta)
        name = "EB-TCε" + (" (IDS)" if self.selection == "ids" else "")
        return Composition(sampling.Initial(rule, first="all"), karmed.ChernoffGLR(threshold=self.threshold),
                           delta=self.delta, epsilon=self.epsilon, sigma=self.sigma, name=name)


@dataclasses.dataclass(frozen=True)
class KArmedKLLUCB(Composed):
    """KL-LUCB (Kaufmann & Kalyanakrishnan, COLT 2013) on a K-armed bandit: each arm once, then
    rounds of two pulls (the empirical best arm and the challenger of largest KL upper bound) until
    the best arm's KL lower bound exceeds the challenger's upper bound
    (:class:`jaxbandits.rules.karmed.KLLUCB`, :class:`jaxbandits.rules.karmed.LUCBStop`), the bounds
    at the level beta(t, delta) of ``threshold`` (Garivier & Kaufmann 2016's experiments:
    log((log t + 1) / delta), ``"heuristic"``).

    Attributes:
      delta: confidence level.
      threshold: "heuristic", "gk16" or "log_t" (:mod:`jaxbandits.rules.thresholds`).
      sigma: the Gaussian noise scale (None: the instance's).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    threshold: str = "heuristic"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    def __post_init__(self):
        karmed.thresholds.resolve("karmed", self.threshold)
        karmed.check_pair_threshold(self.threshold, "KArmedKLLUCB")

    def rules(self) -> Composition:
        return Composition(sampling.Initial(karmed.KLLUCB(threshold=self.threshold), first="all"),
                           karmed.LUCBStop(threshold=self.threshold), delta=self.delta, sigma=self.sigma,
                           name="KL-LUCB")


@dataclasses.dataclass(frozen=True)
class KArmedLUCB1(Composed):
    """LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone, ICML 2012, Sec 3; m = 1, epsilon = 0) on a
    K-armed bandit: each arm once, then rounds of two pulls (the empirical best arm h_t and the arm
    l_t != h_t of largest upper confidence bound) until L_{h_t} > U_{l_t}, with Hoeffding's bounds
    mu_hat_a -+ sigma sqrt(2 beta(t, delta) / N_a) at beta(t, delta) = log(5 K t^4 / (4 delta)),
    t the round index (:class:`jaxbandits.rules.karmed.LUCB1`,
    :class:`jaxbandits.rules.karmed.LUCB1Stop`).  sigma: 1/2 for Bernoulli arms (the paper's
    rewards in [0, 1]), the noise scale for Gaussian arms.

    Attributes:
      delta: confidence level.
      threshold: "lucb1" (the paper's beta) or "heuristic" log((1 + log t) / delta).
      sigma: the sub-Gaussian scale (None: the instance's; 1/2 for Bernoulli rewards).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    threshold: str = "lucb1"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    def __post_init__(self):
        karmed.thresholds.resolve("lucb1", self.threshold)

    def rules(self) -> Composition:
        return Composition(sampling.Initial(karmed.LUCB1(threshold=self.threshold), first="all"),
                           karmed.LUCB1Stop(threshold=self.threshold), delta=self.delta, sigma=self.sigma,
                           name="LUCB1")


#: lil'UCB's constants (Jamieson et al. 2014): ``"paper"`` epsilon = 0.01, beta = 1,
#: lambda = ((2 + beta) / beta)^2 = 9, delta' = delta; ``"heuristic"`` (the paper's lil'UCB
#: Heuristic) epsilon = 0, beta = 1/2, lambda = 1 + 10 / K, delta' = delta / 5
LIL_PRESETS = {"paper": dict(eps=0.01, beta=1.0, lam=None, lam_per_arm=0.0, delta_factor=1.0),
               "heuristic": dict(eps=0.0, beta=0.5, lam=1.0, lam_per_arm=10.0, delta_factor=0.2)}


@dataclasses.dataclass(frozen=True)
class KArmedLilUCB(Composed):
    """lil'UCB (Jamieson, Malloy, Nowak & Bubeck, COLT 2014, Algorithm 1) on a K-armed bandit: each
    arm once, then the arm of largest upper bound mu_hat_a + (1 + beta) (1 + sqrt(eps)) sigma
    sqrt(2 (1 + eps) log(log((1 + eps) N_a) / delta') / N_a), until some arm has
    N_a >= 1 + lambda sum_{b != a} N_b; the most pulled arm is recommended
    (:class:`jaxbandits.rules.karmed.LilUCB`, :class:`jaxbandits.rules.karmed.LilUCBStop`).

    Presets (:data:`LIL_PRESETS`; the constants the paper recommends for its experiments, as its
    public implementations read them): ``"paper"`` eps = 0.01, beta = 1, lambda =
    ((2 + beta) / beta)^2, delta' = delta; ``"heuristic"`` eps = 0, beta = 1/2, lambda = 1 + 10 / K,
    delta' = delta / 5.  ``delta`` is the algorithm's parameter: the paper's Theorem 2 guarantees a
    success probability that is a function of delta' and eps, not 1 - delta itself.

    Attributes:
      delta: the confidence parameter (delta' = delta for "paper", delta / 5 for "heuristic").
      preset: "paper" or "heuristic".
      eps, beta: the bound's epsilon and beta (None: the preset's).
      lam: lambda of the stopping rule (None: the preset's; with "paper", ((2 + beta) / beta)^2).
      sigma: the sub-Gaussian scale (None: the instance's; 1/2 for Bernoulli rewards).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    preset: str = "paper"
    eps: float | None = hyperparameter(None, low=0.0, low_open=False)
    beta: float | None = hyperparameter(None, low=0.0)
    lam: float | None = hyperparameter(None, low=0.0)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    def __post_init__(self):
        if self.preset not in LIL_PRESETS:
            raise ValueError(f"preset must be one of {tuple(LIL_PRESETS)}, got {self.preset!r}")

    def constants(self) -> dict:
        """eps, beta, lam, lam_per_arm and delta_factor of this configuration."""
        c = dict(LIL_PRESETS[self.preset])
        if self.eps is not None:
            c["eps"] = self.eps
        if self.beta is not None:
            c["beta"] = self.beta
        if self.lam is not None:
            c["lam"], c["lam_per_arm"] = self.lam, 0.0
        elif c["lam"] is None:
            c["lam"] = ((2.0 + c["beta"]) / c["beta"]) ** 2
        return c

    def rules(self) -> Composition:
        c = self.constants()
        rule = karmed.LilUCB(eps=c["eps"], beta=c["beta"], delta_factor=c["delta_factor"])
        stop = karmed.LilUCBStop(lam=c["lam"], lam_per_arm=c["lam_per_arm"])
        name = "lil'UCB" if self.preset == "paper" else "lil'UCB (heuristic)"
        return Composition(sampling.Initial(rule, first="all"), stop, delta=self.delta, sigma=self.sigma, name=name)


class EliminationState(NamedTuple):
    alive: jax.Array       # [K] bool, the arms not eliminated
    rounds: jax.Array      # rounds done (every alive arm pulled once per round)
    pulls: jax.Array       # [K]
    sums: jax.Array        # [K]
    unfinished: jax.Array  # rounds whose Bernoulli rewards had a draw unfinished (pull_counts_fixed)


@dataclasses.dataclass(frozen=True)
class SuccessiveElimination(Algorithm):
    """Successive Elimination (Even-Dar, Mannor & Mansour, JMLR 2006, Algorithm 3, unknown biases)
    on a K-armed bandit: every round pulls each remaining arm once (one engine step, the round's
    rewards drawn as per-arm sums); after round t, with alpha_t = 2 sigma sqrt(log(c K t^2 / delta) / t)
    (the paper's sqrt(log(c n t^2 / delta) / t) for rewards in [0, 1], sigma = 1/2; c = 4), every arm
    with max_b mu_hat_b - mu_hat_a >= 2 alpha_t is eliminated; it stops when one arm is left.

    Attributes:
      delta: confidence level.
      c: the constant c of alpha_t (the paper: 4).
      sigma: the sub-Gaussian scale (None: the instance's; 1/2 for Bernoulli rewards).
    """

    delta: float = hyperparameter(0.1, low=0.0, high=1.0, traced=True)
    c: float = hyperparameter(4.0, low=0.0, traced=True)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)

    needs_span: ClassVar[bool] = False

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        karmed.check_k_armed(instance, "SuccessiveElimination")

    def init(self, key, instance: Instance) -> EliminationState:
        K = instance.num_arms
        dt = instance.arms.dtype
        return EliminationState(jnp.ones((K,), bool), jnp.zeros((), jnp.int32), jnp.zeros((K,), dt),
                                jnp.zeros((K,), dt), jnp.zeros((), jnp.int32))

    def width(self, t, instance: Instance):
        """alpha_t (class docstring; :func:`jaxbandits.rules.thresholds.even_dar_width`)."""
        sigma = common.noise_scale(self.sigma, instance)
        return karmed.thresholds.even_dar_width(t, self.delta, instance.num_arms, self.c, sigma)

    def step(self, key, state: EliminationState, instance: Instance) -> EliminationState:
        dt = instance.arms.dtype
        counts = state.alive.astype(dt)
        drawn, finished = pull_counts_fixed(key, instance, counts, max_count=1)   # one pull per alive arm
        sums = state.sums + drawn
        pulls = state.pulls + counts
        t = state.rounds + 1
        mu = sums / jnp.maximum(pulls, 1.0)
        top = jnp.max(jnp.where(state.alive, mu, -jnp.inf))
        alive = state.alive & (top - mu < 2.0 * self.width(t.astype(dt), instance))
        return EliminationState(alive, t, pulls, sums, state.unfinished + (~finished))

    def done(self, state: EliminationState) -> jax.Array:
        return jnp.sum(state.alive) <= 1

    def outcome(self, state: EliminationState, instance: Instance) -> Outcome:
        mu = state.sums / jnp.maximum(state.pulls, 1.0)
        best = jnp.argmax(jnp.where(state.alive, mu, -jnp.inf))
        return Outcome(answer_mask(best, instance.num_items), jnp.sum(state.pulls).astype(jnp.int32),
                       state.pulls.astype(jnp.int32), converged=state.unfinished == 0)
