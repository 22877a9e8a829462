"""Peace (Katz-Samuels, Jain, Karnin & Jamieson, "An Empirical Process Approach to the Union
Bound: Practical Algorithms for Combinatorial and Linear Bandits", NeurIPS 2020), fixed budget:
:class:`Peace`, the algorithm of the paper as its linear-bandit implementations run it; and
:class:`HalvingPeace`, seed 002's approximation of it.

**Peace** (fixed budget).  The epochs are sized by the complexity of the surviving answers, rho(Z_k)
= min_lambda max_{z, z' in Z_k} ||z - z'||^2_{A(lambda)^-1} (the XY design value, seed 001 Sec 1.2),
and each epoch measures with the XY design of the survivors' differences over *all* arms:

1. R = max(1, ceil(log2 rho(Z))) epochs of floor(B / R) pulls (the last takes the rest of B);
2. epoch k: lambda_k, rho_k = the XY design of Z_k (:func:`jaxbandits.design.xy_allocation` over every
   arm, the survivors' pairs), rounded to the epoch's pulls (Pukelsheim's efficient
   apportionment, :func:`jaxbandits.design.round_design`), pulled; theta_k = the least-squares
   estimate of this epoch's pulls alone (pseudo-inverse);
3. Z_{k+1}: the survivors sorted by z^T theta_k, the longest prefix with rho(prefix) <= rho_k / 2
   (a bisection on its length, ceil(log2 M) design solves); stop early with one survivor;
4. recommend argmax_{z in Z_k} z^T theta_k of the last epoch.

That is the fixed-budget Peace of Xiong et al.'s code (github.com/FFTypeZero/bobw_linear,
``algorithms/peace.py``, ``Peace.sto_run``), which rounds with the efficient apportionment of
Katz-Samuels et al.'s code and solves every design with their Frank-Wolfe of 999 iterations with
step 0.5 / (k + 2) (``design="released"``, the default: fixed iterations, so no loop in a step
depends on the data); ``design="certified"`` solves them with the library's certified XY solver
instead, which gives rho at its optimum (the released Frank-Wolfe stops above it).  Because
the design measures the survivors' differences with every arm, on Soare et al.'s instance it pulls
e_2 to resolve e_1 against the near arm x', which the halving approximation below, measuring only
among the survivors, cannot (``experiments/peace_soare.py`` compares the two with the released
error rates).

**HalvingPeace**: Peace as seed 002 runs it (Azizi et al. 2022, Sec 7, Remark 2, Sec 8): the
Gaussian width of Katz-Samuels et al. (App D, "computationally efficient algorithm"),
E_eta[ sup_z (z0 - z)^T A(lambda)^{-1/2} eta / (b + theta0^T (z0 - z)) ], minimised over the
simplex of the surviving arms by stochastic mirror descent with single-eta gradient estimates,
inside the elimination skeleton of GSE: s = ceil(log2 K) stages of B / s pulls, theta0 the previous
stage's estimate (0 at the start), z0 = argmax_z theta0^T z, b = 1, allocation = the averaged
mirror-descent iterate times the stage budget, least squares, keep the better half (the seed 002
authors' release).  That is what :class:`HalvingPeace` computes, batched and jitted:

* A(lambda) = sum_x (lambda_x / 2 + 1 / (2 |A_t|)) x x^T (+ the projector on span(A_t)^perp), the
  mixture with the uniform design that keeps A invertible (Peace's Delta-tilde; the authors'
  release);
* A^{-1/2} eta is replaced by L^{-T} eta with A = L L^T (Cholesky): both are N(0, A^{-1}), so the
  Gaussian width is the same, and the Cholesky factor is cheap and smoothly differentiable;
* entropic mirror descent for ``md_iters`` iterations (authors: between 10 and 100), each with
  ``md_samples`` eta draws (authors: 1), gradients by automatic differentiation (authors: a
  Kronecker-sum formula), step size sqrt(2 log |A_t| / T) / ||g||_inf (the standard step of
  mirror descent on the simplex; the authors' kappa = 2 b^2 sqrt(2/T) / d^3 barely moves lambda);
* the allocation rounds n * lambda_bar by efficient apportionment (authors: floor plus a uniform
  multinomial remainder).

One ``step`` is one epoch (Peace) or one stage (HalvingPeace).

Noise: neither reads a noise scale: the epoch sizes depend on B and the arms only, the Gaussian
width has standard normal eta whatever sigma; sigma enters only the error bounds (Katz-Samuels et
al. Theorem 7), so there is no ``sigma`` option.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms.base import (Algorithm, Outcome, answer_mask, arms_and_dim, hyperparameter, instance_cache,
                                        map_instances, with_cache)
from jaxbandits.algorithms.stages import halving_schedule, keep_top, projected_least_squares, round_allocation, stage_budget
from jaxbandits import design
from jaxbandits.design.core import null_projector
from jaxbandits.design.minimax import xy_fixed_iterations
from jaxbandits.environment import pull_counts
from jaxbandits.instances.base import Instance, as_batch


def gaussian_width_objective(lam, X, alive, perp, theta0, z0, b, etas):
    """Monte Carlo estimate of E_eta max_{z in A_t} (z0 - z)^T L^{-T} eta / (b + theta0^T (z0 - z)).

    A = sum_x (lam_x / 2 + u_x / 2) x x^T + P_perp = L L^T, u uniform on the surviving arms
    (Katz-Samuels et al. 2020 App D objective with the Delta-tilde mixture).  etas: [S, d].
    """
    dt = X.dtype
    w = alive.astype(dt)
    u = w / jnp.sum(w)
    mix = 0.5 * lam + 0.5 * u
    A = (X.T * mix) @ X + perp
    L = jnp.linalg.cholesky(A)
    W = jax.scipy.linalg.solve_triangular(L.T, etas.T, lower=False)  # [d, S] = L^{-T} eta
    diff = z0[None, :] - X                                            # [K, d]
    denom = b + diff @ theta0                                         # [K] > 0 (z0 is the argmax)
    ratios = (diff @ W) / denom[:, None]                              # [K, S]
    ratios = jnp.where(alive[:, None], ratios, -jnp.inf)
    return jnp.mean(jnp.max(ratios, axis=0))


def peace_allocation(key, X, alive, theta0, *, iters: int = 100, samples: int = 1, b: float = 1.0):
    """Averaged stochastic-mirror-descent design lambda_bar [K] over the surviving arms."""
    dt = X.dtype
    K, d = X.shape
    perp, _ = null_projector(X, alive)
    w = alive.astype(dt)
    lam0 = w / jnp.sum(w)
    z0 = X[jnp.argmax(jnp.where(alive, X @ theta0, -jnp.inf))]
    step0 = jnp.sqrt(2.0 * jnp.log(jnp.maximum(jnp.sum(w), 2.0)) / iters)
    grad = jax.grad(gaussian_width_objective)

    def body(i, carry):
        lam, acc = carry
        etas = jax.random.normal(jax.random.fold_in(key, i), (samples, d), dt)
        g = grad(lam, X, alive, perp, theta0, z0, b, etas)
        g = jnp.where(alive, g, 0.0)
        scale = jnp.maximum(jnp.max(jnp.abs(g)), 1e-300)
        logits = jnp.log(jnp.maximum(lam, 1e-300)) - step0 * g / scale
        logits = jnp.where(alive, logits - jnp.max(jnp.where(alive, logits, -jnp.inf)), -jnp.inf)
        lam = jnp.exp(logits)
        lam = lam / jnp.sum(lam)
        return lam, acc + lam

    _, acc = jax.lax.fori_loop(0, iters, body, (lam0, jnp.zeros(K, dt)))
    return acc / iters


class HalvingPeaceState(NamedTuple):
    alive: jax.Array
    stage: jax.Array
    pulls: jax.Array
    theta: jax.Array


@dataclasses.dataclass(frozen=True)
class HalvingPeace(Algorithm):
    """Seed 002's approximation of fixed-budget Peace (Katz-Samuels et al. 2020): the Gaussian width
    minimised by mirror descent over the survivors, in GSE's halving skeleton (module docstring).

    Attributes:
      budget: B (>= K).
      eta: elimination parameter of the skeleton (2 in seed 002).
      md_iters: mirror-descent iterations per stage; md_samples: eta draws per gradient.
      b: the offset b of the Gaussian-width ratio (1 in the authors' release).
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    eta: float = 2.0
    md_iters: int = hyperparameter(100, count=1)
    md_samples: int = hyperparameter(1, count=1)
    b: float = hyperparameter(1.0, traced=True)

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if int(self.budget) < instance.num_arms:
            raise ValueError(f"HalvingPeace needs a budget of at least K = {instance.num_arms}, got B = {self.budget}")
        if instance.num_items != instance.num_arms:
            raise ValueError("HalvingPeace (fixed budget, seed 002) identifies the best arm: items must be the arms")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): its stages."""
        return len(halving_schedule(arms_and_dim(instance, dim)[0], self.eta)) - 1

    def init(self, key, instance: Instance) -> HalvingPeaceState:
        K, d = instance.arms.shape
        dt = instance.arms.dtype
        return HalvingPeaceState(jnp.ones(K, bool), jnp.zeros((), jnp.int32), jnp.zeros(K, dt), jnp.zeros(d, dt))

    def step(self, key, state: HalvingPeaceState, instance: Instance) -> HalvingPeaceState:
        X = instance.arms
        K = X.shape[0]
        dt = X.dtype
        sizes = halving_schedule(K, self.eta)
        t = state.stage
        n = stage_budget(self.budget, len(sizes) - 1, t).astype(dt)
        k_md, k_pull = jax.random.split(key)
        lam = peace_allocation(k_md, X, state.alive, state.theta, iters=self.md_iters,
                               samples=self.md_samples, b=self.b)
        counts = round_allocation(lam, n, state.alive, self.policy.kernels)
        sums = pull_counts(k_pull, instance, counts)
        theta = projected_least_squares(X, counts, sums, state.alive, "span")
        alive = keep_top(X @ theta, state.alive, jnp.asarray(sizes[1:])[t])
        return HalvingPeaceState(alive, t + 1, state.pulls + counts, theta)

    def done(self, state: HalvingPeaceState) -> jax.Array:
        return jnp.sum(state.alive) <= 1

    def outcome(self, state: HalvingPeaceState, instance: Instance) -> Outcome:
        return Outcome(answer_mask(jnp.argmax(state.alive), instance.num_items),
                       jnp.sum(state.pulls).astype(jnp.int32), state.pulls)


PEACE_DESIGNS = ("released", "certified")


class PeaceState(NamedTuple):
    active: jax.Array     # [M] the surviving answers Z_k
    epoch: jax.Array      # epochs played
    epochs: jax.Array     # R = max(1, ceil(log2 rho(Z)))
    length: jax.Array     # floor(B / R), the pulls of every epoch but the last
    pulls: jax.Array      # [K] pulls per arm so far
    theta: jax.Array      # [d] the last epoch's estimate
    stopped: jax.Array


@dataclasses.dataclass(frozen=True)
class Peace(Algorithm):
    """Fixed-budget Peace (Katz-Samuels et al. 2020; module docstring): epochs sized by rho, the XY
    design over every arm for the survivors' differences, the survivors halved in rho.

    Attributes:
      budget: B (at least the number of epochs; every epoch pulls at least once).
      design: "released" (the released code's Frank-Wolfe, ``design_iters - 1`` iterations of step
        0.5 / (k + 2), :func:`jaxbandits.design.minimax.xy_fixed_iterations`) or "certified"
        (:func:`jaxbandits.design.xy_allocation` to the relative gap ``design_tol``).
      design_tol: relative duality gap of the certified XY design solves.
      design_iters: the released Frank-Wolfe's ``iters`` (1000: 999 iterations, as released), or the
        certified solver's iteration cap.
    """

    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)
    design: str = "released"
    design_tol: float = hyperparameter(1e-3, low=0.0, traced=True)
    design_iters: int = hyperparameter(1_000, count=2)

    def __post_init__(self):
        if self.design not in PEACE_DESIGNS:
            raise ValueError(f"design must be one of {PEACE_DESIGNS}, got {self.design!r}")

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if int(self.budget) < 1:
            raise ValueError(f"Peace needs a budget of at least 1 pull, got B = {self.budget}")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes at most (:class:`~jaxbandits.algorithms.base.StepsNeeded`): its
        epochs, R = max(1, ceil(log2 rho(Z))) per instance (the largest over a batch)."""
        if not isinstance(instance, Instance):
            raise TypeError("Peace.steps_needed needs the instance (its epochs depend on rho(Z))")
        rho = instance_cache(instance)  # a prepared batch carries rho(Z) already
        if rho is None:
            with jax.enable_x64(True):
                rho = map_instances(self, "initial_rho", as_batch(instance))
        return int(np.max(_epochs(np.asarray(rho))))

    def initial_rho(self, instance: Instance) -> jax.Array:
        """rho(Z) with every item active, which sets the epochs: the same for every replication
        of an instance."""
        return self._design(instance.arms, instance.items, instance.valid_items(), instance.arm_mask)[1]

    def prepare(self, instances: Instance) -> Instance:
        """Solve rho(Z) once per instance instead of in every replication's ``init`` (on an
        accelerator ``init`` runs over every lane at each refill: a 999-iteration XY design)."""
        return with_cache(instances, map_instances(self, "initial_rho", instances))

    def _design(self, X, Z, item_mask, arm_mask=None, needed=None):
        """(lambda, rho) of the XY design of the ``item_mask`` items over every arm; ``needed``: whether
        the result is used (a fused kernel skips the lanes where it is not)."""
        if self.design == "released":
            return xy_fixed_iterations(X, Z, item_mask=item_mask, iters=int(self.design_iters),
                                       kernels=self.policy.kernels, needed=needed)
        trips = int(self.design_iters) if self.policy.batched else None
        sol = design.xy_allocation(X, Z, item_mask=item_mask, arm_mask=arm_mask, tol=self.design_tol,
                                   max_iters=int(self.design_iters), fixed_trips=trips)
        return sol.allocation, sol.value

    def init(self, key, instance: Instance) -> PeaceState:
        X = instance.arms
        K, d = X.shape
        dt = X.dtype
        active = instance.valid_items()
        cached = instance_cache(instance)
        rho = self.initial_rho(instance) if cached is None else cached
        epochs = jnp.maximum(1, jnp.ceil(jnp.log2(jnp.maximum(rho, 1.0)))).astype(jnp.int32)
        length = jnp.floor(jnp.asarray(self.budget, dt) / epochs.astype(dt)).astype(jnp.int32)
        return PeaceState(active, jnp.zeros((), jnp.int32), epochs, length, jnp.zeros((K,), dt), jnp.zeros((d,), dt),
                          jnp.zeros((), bool))

    def step(self, key, state: PeaceState, instance: Instance) -> PeaceState:
        X, Z = instance.arms, instance.items
        dt = X.dtype
        M = Z.shape[0]
        # a stopped replication's step is discarded by the engine: its designs need not run
        lam, rho = self._design(X, Z, state.active, instance.arm_mask, needed=~state.stopped)
        last = state.epoch >= state.epochs - 1
        n = jnp.where(last, jnp.asarray(self.budget, jnp.int32) - state.length * state.epoch, state.length)
        counts = design.round_design(lam, n.astype(dt), arm_mask=instance.arm_mask,
                                     fixed_trips=self.policy.batched).astype(dt)
        sums = pull_counts(key, instance, counts)
        theta = projected_least_squares(X, counts, sums, None, "pinv")  # this epoch's pulls alone
        # the survivors by estimated value, best first; the longest prefix with rho <= rho_k / 2
        values = jnp.where(state.active, Z @ theta, -jnp.inf)
        rank = jnp.zeros((M,), jnp.int32).at[jnp.argsort(-values)].set(jnp.arange(M, dtype=jnp.int32))
        threshold = rho / 2.0
        n_active = jnp.sum(state.active).astype(jnp.int32)

        def bisect(_, bounds):
            lo, hi = bounds
            mid = (lo + hi) // 2
            go = hi - lo > 1
            rho_mid = self._design(X, Z, state.active & (rank < mid), instance.arm_mask,
                                   needed=go & ~last & ~state.stopped)[1]
            return (jnp.where(go & (rho_mid <= threshold), mid, lo), jnp.where(go & (rho_mid > threshold), mid, hi))

        lo, _ = jax.lax.fori_loop(0, max(1, math.ceil(math.log2(max(M, 2)))), bisect,
                                  (jnp.ones((), jnp.int32), n_active))
        active = jnp.where(last, state.active, state.active & (rank < lo))
        stopped = last | (jnp.sum(active) <= 1)
        return PeaceState(active, state.epoch + 1, state.epochs, state.length, state.pulls + counts, theta, stopped)

    def done(self, state: PeaceState) -> jax.Array:
        return state.stopped

    def outcome(self, state: PeaceState, instance: Instance) -> Outcome:
        best = jnp.argmax(jnp.where(state.active, instance.items @ state.theta, -jnp.inf))
        return Outcome(answer_mask(best, instance.num_items), jnp.sum(state.pulls).astype(jnp.int32),
                       state.pulls)


def _epochs(rho):
    """R = max(1, ceil(log2 rho)) (NumPy)."""
    return np.maximum(1, np.ceil(np.log2(np.maximum(rho, 1.0)))).astype(int)
