"""GSE: Generalized Successive Elimination for fixed-budget best-arm identification (seed 002).

Azizi, Kveton & Ghavamzadeh, "Fixed-Budget Best-Arm Identification in Structured Bandits", IJCAI
2022, Algorithm 1.  s = ceil(log_eta K) stages share the budget B evenly (n = floor(B / s) pulls per
stage; the B mod s left-over pulls go to the last stages, as in the authors' release).  Stage t:

1. Projection (line 2): the surviving arms A_t are projected on their span (dimension d_t).  With
   fixed shapes this is done by adding the projector P_perp onto span(A_t)^perp to every matrix
   that is inverted (:func:`jaxbandits.design.core.null_projector`): for x in the span,
   x^T (V + P_perp)^{-1} x = x^T V^+ x, i.e. exactly the projected problem.  ``projection="pinv"``
   is the alternative the paper mentions (Huang et al. 2021): no projection, V^{-1} replaced by
   the Moore-Penrose pseudo-inverse of the stage's Gram matrix.
2. Exploration (line 3): an allocation Pi_t of the n pulls over A_t: ``"uniform"``;
   ``"fwg"`` the G-optimal design by Frank-Wolfe with line search (Algorithm 2 / App C; the exact
   line search is done on log det, the Kiefer-Wolfowitz-equivalent objective, which is what the
   authors' release runs and what converges to the KW value d_t -- see
   :func:`jaxbandits.design.gopt.g_optimal`), rounded to n pulls; ``"fwg_g"`` Algorithm 2 with
   the line search on the G-objective itself (:func:`jaxbandits.design.gopt.fwg`; it can stall
   above d_t); ``"wynn"`` Wynn's method (Fedorov 1972); ``"greedy"`` the sequential G-greedy
   allocation of Soare et al. (2014).  Pulls are drawn with
   :func:`jaxbandits.environment.pull_counts` (O(K) per stage).
3. Estimation (line 4): least squares theta_t = V_t^{-1} b_t, mu_i = x_i^T theta_t (Eq. 1), or
   the logistic maximum-likelihood estimate by IRLS (Eq. 4; :mod:`jaxbandits.algorithms.glm`),
   mu_i = h(x_i^T theta_t) (same ranking as x_i^T theta_t).  Only the stage's own observations are
   used (Algorithm 1; ``memory=True`` pools all stages, an option of the authors' code).
4. Elimination (line 5): keep the ceil(|A_t| / eta) arms of largest estimated mean.

One ``step`` is one stage; the algorithm is done after s stages and returns the single survivor.
Outcome.samples is the budget spent (= B).

Noise: no step of Algorithm 1 reads the noise scale sigma (the schedule depends on K, eta and B,
the designs on the arms, the elimination on the estimates only), so GSE has no ``sigma`` option;
sigma enters only its error bounds, Theorem 4.1 Eqs. (2)-(3) and Theorem 5.1 Eqs. (5)-(6)
(:func:`theorem_4_1_bound` takes it).  Reward models: the linear estimator accepts every model
(logistic rewards make it misspecified, as in Sec 8.4); the logistic one needs rewards in {0, 1}
and ``validate`` refuses Gaussian rewards.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms.base import Algorithm, Outcome, answer_mask, arms_and_dim, hyperparameter
from jaxbandits.algorithms.stages import (descending_rank, halving_schedule, keep_top,  # noqa: F401 (also imported
                                         projected_least_squares, round_allocation, stage_budget, stage_budgets)  # from here)
from jaxbandits.algorithms.glm import logistic_mle
from jaxbandits.design.core import null_projector
from jaxbandits.design.gopt import fwg as _fwg_literal
from jaxbandits.design.gopt import g_optimal, greedy_allocation, wynn
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance

DESIGNS = ("uniform", "fwg", "fwg_g", "wynn", "greedy")
ESTIMATORS = ("linear", "logistic")
PROJECTIONS = ("span", "pinv")


def uniform_allocation(key: jax.Array, n: jax.Array, mask: jax.Array, dtype) -> jax.Array:
    """floor(n / |A|) pulls per surviving arm, the n mod |A| extra pulls on random distinct arms
    (as the authors' release does; a fixed choice would favour low-index arms)."""
    size = jnp.sum(mask).astype(dtype)
    n = jnp.asarray(n, dtype)
    base = jnp.floor(n / size)
    extra = n - base * size
    u = jnp.where(mask, jax.random.uniform(key, mask.shape, dtype), jnp.inf)
    rank = descending_rank(-u)
    return jnp.where(mask, base + (rank < extra).astype(dtype), 0.0)


def design_counts(design: str, key: jax.Array, X: jax.Array, alive: jax.Array, n: jax.Array,
                  max_n: int | None = None, *, design_iters: int = 1000, design_tol: float = 1e-2) -> jax.Array:
    """Pulls [K] (float) of one stage of n pulls on the surviving arms, for a named design."""
    return design_and_counts(design, key, X, alive, n, max_n, design_iters=design_iters,
                             design_tol=design_tol)[1]


def design_and_counts(design: str, key: jax.Array, X: jax.Array, alive: jax.Array, n: jax.Array,
                      max_n: int | None = None, *, design_iters: int = 1000, design_tol: float = 1e-2,
                      init: jax.Array | None = None, kernels: str = "xla"):
    """(design [K], pulls [K]) of one stage; ``init`` warm-starts the "fwg" solver.

    n (the stage budget) may be traced; ``max_n``, an optional static cap on n, only bounds the
    "greedy" loop (None: it runs until n pulls are placed).

    The design is the continuous allocation before rounding (the counts / n for "uniform" and
    "greedy", which have none).  ``kernels``: the form of the "fwg" solver's Frank-Wolfe loop
    (:func:`jaxbandits.design.gopt.g_optimal`) and of the rounding's corrections
    (:func:`jaxbandits.algorithms.stages.round_allocation`), the policy's
    (:attr:`jaxbandits.batching.SolvePolicy.kernels`): "xla" runs them as ``while_loop`` s, a
    fused form as kernels of trip counts known at compile time.
    """
    dt = X.dtype
    if design == "uniform":
        c = uniform_allocation(key, n, alive, dt)
        return c / jnp.maximum(jnp.sum(c), 1.0), c
    if design == "greedy":
        c = greedy_allocation(X, n, arm_mask=alive, max_n=max_n).astype(dt)
        return c / jnp.maximum(jnp.sum(c), 1.0), c
    if design == "fwg":
        sol = g_optimal(X, arm_mask=alive, init=init, tol=design_tol, max_iters=design_iters, kernels=kernels)
    elif design == "fwg_g":
        sol = _fwg_literal(X, arm_mask=alive, tol=design_tol, max_iters=design_iters)
    elif design == "wynn":
        sol = wynn(X, arm_mask=alive, tol=design_tol, max_iters=design_iters)
    else:
        raise ValueError(f"unknown design {design!r}; expected one of {DESIGNS}")
    return sol.allocation, round_allocation(sol.allocation, n, alive, kernels)


# ------------------------------------------------------------------------------------------------
# GSE
# ------------------------------------------------------------------------------------------------
class GSEState(NamedTuple):
    alive: jax.Array        # [K] bool, A_t
    stage: jax.Array        # t - 1 (0-based), int32
    pulls: jax.Array        # [K] total pulls
    sums: jax.Array         # [K] total reward sums (for memory=True)
    theta: jax.Array        # [d] last estimate
    unconverged: jax.Array  # number of IRLS fits that did not converge (logistic only)
    design: jax.Array       # [K] last stage's continuous design (warm start of the next "fwg" solve)


@dataclasses.dataclass(frozen=True)
class GSE(Algorithm):
    """Generalized Successive Elimination (seed 002 Algorithm 1), fixed budget.

    Attributes:
      budget: B, total number of pulls (>= K).
      eta: elimination parameter (keep ceil(|A_t| / eta) arms per stage; default 2).
      design: exploration allocation, one of ``DESIGNS`` (Sec 8 names: GSE-Lin = "uniform",
        GSE-Lin-FWG = "fwg", GSE-Lin-Greedy = "greedy", GSE-Lin-Wynn = "wynn").
      estimator: "linear" (Eq. 1) or "logistic" (Eq. 4, IRLS).
      projection: "span" (Sec 4 projection) or "pinv" (pseudo-inverse alternative).
      memory: pool the observations of all stages (False = Algorithm 1).
      design_iters, design_tol: iteration cap (default 1000; 100 for "fwg_g", the N of Alg 2,
        whose G-line search stalls and would otherwise run to the cap) and relative KW-gap
        tolerance of the design solver (stop once max_x ||x||^2_{A^-1} <= (1 + tol) d_t).  The
        default 1e-2 sits below the rounding error: ROUND of n pulls over p support points loses
        up to a factor about 1 + p / n in G-value (efficient apportionment, Pukelsheim 2006
        Ch. 12), and n / p stays below ~100 on seed 002's instances; 1e-3 took 3-4x more
        Frank-Wolfe iterations at K = 64 without changing the rounded allocation much.
      warm_start: start each "fwg" solve from the previous stage's design restricted to the
        survivors (seed 002 App C: Kumar-Yildirim-style initialisations cut the iterations).
      irls_iters, irls_reg: IRLS iteration cap and ridge guard (logistic).

    ``budget`` is a dynamic field (:attr:`Algorithm.dynamic_fields`): the engine passes it to the
    compiled program as a traced scalar, so every B of a sweep shares one executable.  Only the
    stage count s = ceil(log_eta K) and the survivor counts are static (they depend on K and eta
    alone); the stage budgets n_t are computed in the program (:func:`stage_budget`).
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    eta: float = 2.0
    design: str = "fwg"
    estimator: str = "linear"
    projection: str = "span"
    memory: bool = False
    design_iters: int | None = hyperparameter(None, count=1)
    design_tol: float = hyperparameter(1e-2, low=0.0, traced=True)
    warm_start: bool = True
    irls_iters: int = hyperparameter(50, count=1)
    irls_reg: float = hyperparameter(1e-6, low=0.0, low_open=False, traced=True)

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def __post_init__(self):
        if self.design not in DESIGNS:
            raise ValueError(f"unknown design {self.design!r}; expected one of {DESIGNS}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown estimator {self.estimator!r}; expected one of {ESTIMATORS}")
        if self.projection not in PROJECTIONS:
            raise ValueError(f"unknown projection {self.projection!r}; expected one of {PROJECTIONS}")
        if not self.eta > 1:
            raise ValueError(f"eta must be > 1, got {self.eta}")

    # -- static schedule ---------------------------------------------------------------------
    def schedule(self, num_arms: int):
        """(survivor counts [s + 1], stage budgets [s]) for K arms."""
        sizes = halving_schedule(num_arms, self.eta)
        return np.array(sizes), stage_budgets(int(self.budget), len(sizes) - 1)

    @property
    def iters(self) -> int:
        if self.design_iters is not None:
            return int(self.design_iters)
        return 100 if self.design == "fwg_g" else 1000

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): its stages."""
        return self.num_stages(arms_and_dim(instance, dim)[0])

    def num_stages(self, num_arms: int) -> int:
        return len(halving_schedule(num_arms, self.eta)) - 1

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        K = instance.num_arms
        if int(self.budget) < K:
            raise ValueError(f"GSE needs a budget of at least K = {K} pulls (one per arm), got B = {self.budget}")
        if self.estimator == "logistic" and instance.model == "gaussian":
            raise ValueError("GSE with estimator='logistic' fits a logistic likelihood (seed 002 Eq. 4), "
                             "which needs rewards in {0, 1}: use a 'logistic' or 'bernoulli' instance, or "
                             "estimator='linear' for Gaussian rewards")
        if instance.num_items != K:
            raise ValueError("GSE identifies the best arm: items must be the arms (Z = X)")

    # -- contract ----------------------------------------------------------------------------
    def init(self, key, instance: Instance) -> GSEState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        return GSEState(jnp.ones(K, bool), jnp.zeros((), jnp.int32), jnp.zeros(K, dt), jnp.zeros(K, dt),
                        jnp.zeros(d, dt), jnp.zeros((), jnp.int32), jnp.full(K, 1.0 / K, dt))

    def step(self, key, state: GSEState, instance: Instance) -> GSEState:
        X = instance.arms
        K = X.shape[0]
        dt = X.dtype
        sizes = halving_schedule(K, self.eta)
        t = state.stage
        n = stage_budget(self.budget, len(sizes) - 1, t).astype(dt)
        keep = jnp.asarray(sizes[1:])[t]
        k_design, k_pull = jax.random.split(key)
        alive = state.alive
        lam, counts = design_and_counts(self.design, k_design, X, alive, n, None,
                                        design_iters=self.iters, design_tol=self.design_tol,
                                        init=state.design if self.warm_start else None,
                                        kernels=self.policy.kernels)
        sums = pull_counts(k_pull, instance, counts)
        tot_counts, tot_sums = state.pulls + counts, state.sums + sums
        c_fit, s_fit = (tot_counts, tot_sums) if self.memory else (counts, sums)
        if self.estimator == "linear":
            theta = projected_least_squares(X, c_fit, s_fit, alive, self.projection)
            bad = jnp.zeros((), jnp.int32)
        else:
            perp = None if self.projection == "pinv" else null_projector(X, alive)[0]
            fit = logistic_mle(X, c_fit, s_fit, init=state.theta, reg=self.irls_reg, perp=perp,
                               max_iters=self.irls_iters)
            theta = fit.theta
            bad = (~fit.converged).astype(jnp.int32)
        new_alive = keep_top(X @ theta, alive, keep)
        return GSEState(new_alive, t + 1, tot_counts, tot_sums, theta, state.unconverged + bad, lam)

    def done(self, state: GSEState) -> jax.Array:
        return jnp.sum(state.alive) <= 1

    def outcome(self, state: GSEState, instance: Instance) -> Outcome:
        best = jnp.argmax(state.alive)
        return Outcome(answer_mask(best, instance.num_items), jnp.sum(state.pulls).astype(jnp.int32), state.pulls)


def theorem_4_1_bound(gap_min, budget, num_arms: int, dim, sigma, eta: float = 2.0):
    """Seed 002 Theorem 4.1, Eq. (3): error <= 2 eta log_eta(K) exp(-B Delta^2 / (4 sigma^2 d log_eta K)).

    The G-optimal-design case of GSE with the linear model (logarithms base eta, Sec 4.1)."""
    logk = math.log(num_arms) / math.log(eta)
    return 2.0 * eta * logk * np.exp(-np.asarray(budget) * np.asarray(gap_min) ** 2
                                     / (4.0 * np.asarray(sigma) ** 2 * np.asarray(dim) * logk))
