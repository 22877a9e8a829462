"""LinGame: pure exploration in linear bandits as a game (Degenne, Menard, Shang, Valko, ICML 2020,
"Gamification of pure exploration for linear bandits", arXiv 2007.00953).

The lower bound's characteristic time (Sec 2),

    T*(theta)^{-1} = max_{w in Sigma_K} inf_{lambda in Alt(i*(theta))} 1/2 ||theta - lambda||^2_{V_w} / sigma^2,
    V_w = sum_k w_k x_k x_k^T,

is the value of a zero-sum game between the agent (max player, w) and nature (min player, lambda).
LinGame (Sec 3, Algorithm "LinGame": one learner per answer; the convexified variant LinGame-C
keeps a single learner over (answer, arm) pairs and is not implemented here) plays it with
no-regret learners fed by optimistic gains and tracks the cumulative allocations.  One step = one
pull.  At round t (t pulls so far, theta_hat the lambda-regularised least squares estimate, Sec 2):

1. **Answer**: i_t = i*(theta_hat) (best item; for Top-m, the m best items, :class:`LinGame` ``m``).
2. **Agent plays first**: w_t from the AdaHedge learner (de Rooij et al. 2014) of answer i_t
   (one learner per answer, created at the first visit, as the experiments' code keys them).
3. **Nature best-responds** (Sec 3): lambda_t = argmin_{lambda in Alt(i_t)} ||theta_hat -
   lambda||^2_{V_{w_t}}.  Alt(i) is the union of the half-spaces {lambda : lambda^T (z_j - z_i) >= 0}
   (j != i; for Top-m S: i in S, j not in S, seed 003 Sec 2), and the projection on one of them
   has the closed form lambda = theta_hat - (y^T theta_hat / ||y||^2_{V_w^-1}) V_w^-1 y,
   y = z_j - z_i, at value (y^T theta_hat)^2 / (2 ||y||^2_{V_w^-1}): the best response is the
   closest piece.
4. **Optimistic gains** (Sec 3): U_t^k = max_{xi in C_t} 1/(2 sigma^2) (x_k^T (xi - lambda_t))^2 over
   the confidence ellipsoid C_t = {xi : ||xi - theta_hat||^2_{V_t} <= 2 sigma^2 h(t)} (V_t the
   regularised design matrix), i.e.
   U_t^k = (|x_k^T (theta_hat - lambda_t)| / sigma + sqrt(2 h(t)) ||x_k||_{V_t^-1})^2 / 2,
   with h(t) = log t and the gains clipped at log t (``clip_gains``), as the experiments' code
   does; the learner incurs the loss -U_t.
5. **Tracking**: ``tracking="C"`` (cumulative allocations, the experiments' choice): W_t = W_{t-1} +
   w_t (W started at the initial pull counts), pull argmin_k N_k - W_k; ``"D"``: argmin_k N_k - t w_k
   (the run behind seed 003 Fig. 1b).
6. **Stopping** (Sec 3, GLR / Chernoff rule): stop when
   Z(t) = min_{pieces} (y^T theta_hat)^2 / (2 sigma^2 ||y||^2_{A^-1}) > beta(t, delta), answer i_t.
   ``threshold="heuristic"`` (the experiments, Sec 6, after Garivier & Kaufmann 2016 Sec 6):
   beta = log((log t + 1) / delta), with A = V_{N_t} = sum_s x_s x_s^T (no regulariser) as the
   experiments' code; it is not proved delta-correct (in practice it is conservative).
   ``threshold="theoretical"``: with A = V_t the regularised matrix (regulariser ``reg``) and
   S >= ||theta||, beta = (sqrt(log(1/delta) + 1/2 log det(I + V_{N_t} / reg)) + sqrt(reg / 2) S / sigma)^2,
   the self-normalised bound of Abbasi-Yadkori et al. (2011, Thm 2; the paper's Sec 3 stopping
   rule uses a bound of this form): on its event the true theta is within the ellipsoid, so a
   wrong answer can never pass the test, whatever the sampling rule (delta-correct).

Before the game starts every arm is pulled once (the experiments' code; so V_{N_t} is invertible
when the arms span R^d, ``needs_span``).

Experimental configuration (the defaults): AdaHedge with the experiments' initial mixability gap
Delta_0 = 0.01 (``hedge_delta0``), one learner per answer, C-tracking, log t confidence width and
gain clip, heuristic threshold, ridge regulariser reg = 1 (the code starts from V^-1 = I).
:meth:`LinGame.released_code` gives the LinGame run behind seed 003 Fig. 1(b) / Table 3
(github.com/clreda/linear-top-m, ``LinGame_Heuristic``): D-tracking, regulariser (sigma / 20)^2 at
the published sigma = 1/2, and no sigma anywhere (Gaussian(1) formulas, so at noise 1/2 the
threshold is 4x conservative in units of sigma^2).

Noise scale sigma (``sigma`` field, else :func:`common.noise_scale`): the game's gains and the GLR
are Gaussian log-likelihood ratios, 1/(2 sigma^2) ||.||^2 (Sec 2).  It enters the GLR (Z / sigma^2
against beta) and the optimistic gains (item 4); with a fixed ``reg`` the algorithm is exactly
equivariant under (theta, sigma) -> (theta / sigma, 1).

Elimination protocol (docs/design.md, section 5; Tirinzoni & Degenne 2022): :meth:`LinGame.linear_stats`,
:meth:`LinGame.step_masked` (the best response ranges over the pieces y = z_j - z_i whose
challenger j is active; for Top-m the members of the empirical answer are always active) and
:meth:`LinGame.stopping_threshold` (the threshold of the GLR stopping rule, which the elimination
tests share).

Tirinzoni & Degenne, "On elimination strategies for bandit fixed-confidence identification",
NeurIPS 2022 (:meth:`LinGame.tirinzoni_degenne`, :data:`TIRINZONI_DEGENNE`), run LinGame and its
Top-m form (MisLid) as in their released code (``sampling_rules.jl``, ``LinGame``): a single
AdaHedge learner for every answer (``learners="single"``, "LinGame (with a single learner as in
MisLID)"), C-tracking, no optimism (``optimism=False``: gains 1/2 (x_k^T (theta_hat - lambda_t))^2,
unclipped), and the GLR with the ridge inverse (A_t + I)^{-1} against log((t + 1) / delta)
(``threshold="log_t"``), the threshold of their every stopping and elimination test.

Learner storage: ``learner_slots`` AdaHedge states keyed by the answer (its index for best-arm
identification, its rank in the combinatorial number system for Top-m).  With at most that many
answers (the default: 16; every seed 003 instance) this is exactly one learner per answer; with
more, a new answer takes an empty slot or evicts the least recently used learner, which then
restarts fresh (the experiments' code keeps every learner ever created in a dictionary).

Measured (2 shared CPU cores, load average 10-12 from other sessions; sigma = 1/2, delta = 0.05):

* seed 003 Fig. 1(b) (hard Top-1): ``released_code()`` 7,180 +- 102 (500 runs) against the
  released output 7,138 +- 110 (z = 0.28), 0 errors; the defaults 1,283 +- 39, 0/500 errors.
* calibration suite (100 runs per row, delta in {0.05, 0.2}, sigma in {1/2, 1, 3}): every LinGame
  and LinGame (top-2) row passes (0 errors, scaling p >= 0.05); the mutations fail (sigma ignored:
  ratio 0.03 / 0.06 to the unit-noise run; threshold / 3: 0.24 / 0.32, p_scaling <= 5e-20).
* speed (``benchmarks/lingame_seed003.py``, 1000 replications, compile excluded): 648
  replications/s on Fig. 1(b), 205/s on Fig. 1(a) (Top-2, d = 3: a Cholesky per matrix inverse,
  where d = 2 has a closed form), 7,900/s on App. A Fig. 2 (50 pulls per run).
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.algorithms import common
from jaxbandits.algorithms.base import Algorithm, Outcome, display_name, hyperparameter
from jaxbandits.algorithms.common import glr_statistic_inv, inverse_gram, topm_mask
from jaxbandits.design.games import hedge_update, hedge_weights  # noqa: F401 (also used from here)
from jaxbandits.environment import pull, pull_counts
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import thresholds

THRESHOLDS = thresholds.names("lingame")  # jaxbandits.rules.thresholds.ALIASES
LEARNERS = ("per_answer", "single")

#: LinGame / MisLid in Tirinzoni & Degenne 2022's Table 1 (module docstring)
TIRINZONI_DEGENNE = presets.TD_LINGAME.settings
TRACKINGS = ("C", "D")

#: the LinGame run of seed 003's released code (Code/bandits.py ``LinGame``, ``LinGame_Heuristic``)
SEED003_CODE = presets.LINGAME_SEED003.settings
BEST_RESPONSES = ("agent", "counts")
WIDTHS = ("squared", "norm")


class LinGameState(NamedTuple):
    """State of a LinGame run.

    Attributes:
      stats: sufficient statistics (counts, sums, A = V_{N_t}, b).
      t: pulls so far.
      W: [K] cumulative allocations (C-tracking), started at the initial counts.
      keys: [S] answer key of each learner slot (-1: empty).  used: [S] last round it was used.
      losses: [S, K] AdaHedge cumulative losses.  gap: [S] AdaHedge cumulative mixability gap.
      answer: [M] bool, the empirical answer i*(theta_hat) of the current data.
      stat: the GLR statistic Z(t) of the current data (in units of sigma^2).
      stopped: Z(t) > beta(t, delta).
    """

    stats: common.LinearStats
    t: jax.Array
    W: jax.Array
    keys: jax.Array
    used: jax.Array
    losses: jax.Array
    gap: jax.Array
    answer: jax.Array
    stat: jax.Array
    stopped: jax.Array


# ------------------------------------------------------------------------------------------------
# the alternative's pieces
# ------------------------------------------------------------------------------------------------
def closest_piece(theta: jax.Array, Ainv: jax.Array, items: jax.Array, answer: jax.Array,
                  active: jax.Array, m: int):
    """min over the pieces {lambda : lambda^T (z_j - z_i) >= 0} of Alt(answer) (i in the answer, j
    not in it and ``active``) of (y^T theta)^2 / (2 ||y||^2_{A^-1}), y = z_j - z_i, and the
    minimising (i, j): the GLR statistic (A = V_{N_t}) or nature's best response (A = V_w).

    m = 1: the row of the answer item, O(M d^2).  Top-m: all pairs through G = Z A^-1 Z^T,
    O(M^2 d).  Items identical to an answer item are skipped.
    """
    values = items @ theta
    if m == 1:
        return _row_piece(values, Ainv, items, common.argmax_fast(answer), active)
    return _pieces(values, Ainv, items, answer, active)


def _pieces(values, Ainv, items, answer, active):
    M = items.shape[0]
    G = items @ Ainv @ items.T
    g = jnp.diagonal(G)
    norms = g[:, None] + g[None, :] - 2.0 * G
    gaps = values[:, None] - values[None, :]
    valid = answer[:, None] & ~answer[None, :] & active[None, :] & (norms > 1e-12 * (g[:, None] + g[None, :]))
    z = jnp.where(valid, gaps * gaps / (2.0 * jnp.maximum(norms, 1e-300)), jnp.inf)
    flat = common.argmax_fast(-z.reshape(-1))
    return z.reshape(-1)[flat], flat // M, flat % M


def _row_piece(values, Ainv, items, best, active):
    """The single-answer case of :func:`closest_piece`: O(M d^2)."""
    diffs = items[best][None, :] - items
    norms = jnp.sum((diffs @ Ainv) * diffs, axis=-1)
    gaps = values[best] - values
    same = jnp.all(diffs == 0, axis=-1)
    z = jnp.where(active & ~same, gaps * gaps / (2.0 * jnp.maximum(norms, 1e-300)), jnp.inf)
    j = common.argmax_fast(-z)
    return z[j], best, j


def answer_rank(answer: jax.Array, m: int) -> jax.Array:
    """Rank of an m-subset (bool mask [M]) in the combinatorial number system,
    sum_k C(p_k, k + 1) over its sorted positions p_0 < p_1 < ...: a distinct key per answer."""
    M = answer.shape[0]
    table = np.array([[math.comb(p, k) for k in range(m + 1)] for p in range(M)], np.int64)
    order = jnp.cumsum(answer.astype(jnp.int32))  # k + 1 at the (k+1)-th member
    vals = jnp.take_along_axis(jnp.asarray(table), jnp.clip(order, 0, m)[:, None], axis=1)[:, 0]
    return jnp.sum(jnp.where(answer, vals, 0))


# ------------------------------------------------------------------------------------------------
# the algorithm
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LinGame(Algorithm):
    """LinGame (Degenne et al. 2020, Sec 3, the learners and stopping rule of Sec 6) for best-arm
    identification (m = 1) and Top-m identification (m > 1).

    Attributes:
      m: number of items to identify (1: best-arm identification).
      delta: confidence level.
      threshold: ``"heuristic"`` (Sec 6: log((log t + 1) / delta)) or ``"theoretical"``
        (self-normalised, delta-correct; module docstring).
      tracking: ``"C"`` (cumulative allocations, Sec 3 / the experiments) or ``"D"`` (N_k - t w_k).
      reg: ridge regulariser of theta_hat and of the confidence ellipsoid V_t = V_{N_t} + reg I.
      S: bound on ||theta|| in the theoretical threshold (None: ||theta|| of the instance).
      clip_gains: clip the optimistic gains at log t (the experiments' code); False: unclipped.
      hedge_delta0: AdaHedge's initial mixability gap (0.01 in the experiments' code).
      learner_slots: AdaHedge learners kept (module docstring).
      sigma: sub-Gaussian noise scale (None: :func:`common.noise_scale`); enters the GLR and the
        gains only through ``jnp``.
      best_response: ``"agent"``: nature best-responds to the agent's w_t, ||.||_{V_{w_t}} (Sec 3);
        ``"counts"``: to the counts, ||.||_{V_{N_t}} (seed 003's code).
      width: ``"squared"``: the gains' width sqrt(2 h(t) ||x||^2_{V_t^-1}) (item 4); ``"norm"``:
        sqrt(2 h(t) ||x||_{V_t^-1}) (seed 003's code, ``utils.matrix_norm`` returns the norm).
      learners: ``"per_answer"`` (one AdaHedge per answer, Sec 3) or ``"single"`` (one learner
        for every answer, Tirinzoni & Degenne's code).
      optimism: optimistic gains (item 4); False: h(t) = 0, the plain gains
        1/2 (x_k^T (theta_hat - lambda_t))^2 / sigma^2 (Tirinzoni & Degenne's ``use_optimism=false``).
      name: label.
    """

    m: int = 1
    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    threshold: str = "heuristic"
    tracking: str = "C"
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    S: float | None = hyperparameter(None, low=0.0)
    clip_gains: bool = True
    hedge_delta0: float = hyperparameter(0.01, low=0.0, traced=True)
    learner_slots: int = hyperparameter(16, count=1)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    best_response: str = "agent"
    width: str = "squared"
    learners: str = "per_answer"
    optimism: bool = True
    name: str = display_name("LinGame")

    #: the LinGame run of seed 003's released code (the run behind seed 003 Fig. 1b / Table 3):
    #: D-tracking, ridge (sigma_0 / 20)^2 with sigma_0 = 1/2, Gaussian(1) formulas (``sigma=1``, so
    #: at noise 1/2 the threshold is 4x conservative in units of sigma^2), nature's best response
    #: to the counts V_{N_t} instead of V_{w_t}, and the width sqrt(2 log t ||x||_{V_t^-1}) (a norm
    #: where the paper has its square)
    released_settings: ClassVar[dict] = SEED003_CODE

    def __post_init__(self):
        thresholds.resolve("lingame", self.threshold)
        if self.tracking not in TRACKINGS:
            raise ValueError(f"tracking must be one of {TRACKINGS}, got {self.tracking!r}")
        if self.best_response not in BEST_RESPONSES:
            raise ValueError(f"best_response must be one of {BEST_RESPONSES}, got {self.best_response!r}")
        if self.width not in WIDTHS:
            raise ValueError(f"width must be one of {WIDTHS}, got {self.width!r}")
        if self.learners not in LEARNERS:
            raise ValueError(f"learners must be one of {LEARNERS}, got {self.learners!r}")
        if int(self.learner_slots) < 1:
            raise ValueError(f"learner_slots must be >= 1, got {self.learner_slots}")

    @property
    def top_m(self) -> int:
        return self.m

    @classmethod
    def tirinzoni_degenne(cls, m: int = 1, **kw) -> "LinGame":
        """LinGame (m = 1) or MisLid (m > 1) as in Tirinzoni & Degenne 2022's Table 1
        (:data:`jaxbandits.presets.TD_LINGAME`, module docstring); delta = 0.01 as there unless given."""
        name = "LinGame" if m == 1 else "MisLid"
        return cls(**presets.TD_LINGAME.apply(m=m, name=f"{name} [Tirinzoni & Degenne]", **kw))

    def stopping_threshold(self, state: "LinGameState", instance: Instance):
        """(sigma^2 beta(t, delta), ready) of the GLR stopping rule (module docstring, 6), for the
        elimination wrapper (:class:`jaxbandits.algorithms.Eliminate`): its tests compare the
        unit-variance GLR with this, as the stopping rule compares Z / sigma^2 with beta.  Ready
        from the start (every arm is pulled once first)."""
        dt = instance.arms.dtype
        sigma = common.noise_scale(self.sigma, instance)
        return sigma**2 * self._beta(state.stats, state.t.astype(dt), instance), jnp.ones((), bool)

    def _beta(self, stats: common.LinearStats, tf, inst: Instance):
        """beta(t, delta) of the stopping rule, in units of sigma^2 (module docstring, 6)."""
        dt = inst.arms.dtype
        rule = thresholds.resolve("lingame", self.threshold)
        if rule == "log_log_t":  # Sec 6 (Garivier & Kaufmann 2016 Sec 6)
            return thresholds.log_log_t(tf, self.delta)
        if rule == "log_t":  # Tirinzoni & Degenne 2022 (thresholds.jl)
            return thresholds.log_t(tf, self.delta)
        sigma = common.noise_scale(self.sigma, inst)
        S = jnp.linalg.norm(inst.theta) if self.S is None else jnp.asarray(self.S, dt)
        return thresholds.abbasi_yadkori(stats.gram, self.delta, self.reg, S, sigma)  # Thm 2

    def validate(self, instance: Instance) -> None:
        """Host-side checks: linear rewards (Sec 2), a positive sigma and regulariser, and a
        number of answers whose keys fit in int64."""
        super().validate(instance)
        common.require_linear_rewards(instance, "LinGame")
        common.check_sigma(self.sigma)
        if isinstance(self.reg, (int, float)) and not self.reg > 0:
            raise ValueError(f"reg must be positive, got {self.reg}")
        if math.comb(instance.num_items, self.m) >= 2**62:
            raise ValueError("too many answers to key the learners")

    # -- pieces --------------------------------------------------------------------------------
    def _slots(self, inst: Instance) -> int:
        return int(min(self.learner_slots, math.comb(inst.num_items, self.m)))

    def _answer(self, values):
        if self.m == 1:
            return jnp.arange(values.shape[0]) == common.argmax_fast(values)
        return topm_mask(values, self.m)

    def _estimate(self, stats: common.LinearStats):
        """theta_hat = (V_{N_t} + reg I)^-1 b_t and (V_{N_t} + reg I)^-1 (Sec 2)."""
        d = stats.gram.shape[0]
        Vinv = inverse_gram(stats.gram + self.reg * jnp.eye(d, dtype=stats.gram.dtype))
        return Vinv @ stats.b, Vinv

    def _decide(self, stats: common.LinearStats, t, inst: Instance):
        """(answer, Z(t), stop) of the current data: the GLR stopping rule (module docstring, 6)."""
        dt = inst.arms.dtype
        theta, Vinv = self._estimate(stats)
        values = inst.items @ theta
        answer = self._answer(values)
        sigma = common.noise_scale(self.sigma, inst)
        tf = t.astype(dt)
        # heuristic: V_{N_t}^{-1} (the experiments' code); otherwise the ridge inverse V_t^{-1}
        Ainv = inverse_gram(stats.gram) if self.threshold == "heuristic" else Vinv
        beta = self._beta(stats, tf, inst)
        if self.m == 1:  # seed 000 Lemma 7's statistic (the library's O(M d^2) form)
            z, _ = glr_statistic_inv(theta, Ainv, inst.items)
        else:
            z, _, _ = closest_piece(theta, Ainv, inst.items, answer, jnp.ones_like(answer), self.m)
        z = z / sigma**2  # the Gaussian GLR is 1/(2 sigma^2) ||.||^2 (Sec 2)
        return answer, z, z > beta

    def _lookup(self, state: LinGameState, key):
        """Slot of the learner of answer ``key`` (reset when new: empty slot or least recently used)."""
        hit = state.keys == key
        found = jnp.any(hit)
        lru = common.argmax_fast(-jnp.where(state.keys < 0, -1, state.used))
        slot = jnp.where(found, common.argmax_fast(hit), lru)
        fresh = ~found
        losses = jnp.where(fresh, 0.0, state.losses[slot])
        gap = jnp.where(fresh, jnp.asarray(self.hedge_delta0, state.gap.dtype), state.gap[slot])
        return slot, losses, gap

    def nature(self, theta, w, stats: common.LinearStats, inst: Instance, answer, active):
        """Nature's best response lambda_t = argmin_{lambda in Alt(answer)} ||theta - lambda||^2_V
        (Sec 3; V = V_w, or V_{N_t} with ``best_response="counts"``), over the pieces whose
        challenger j is active: (lambda_t, i, j), the piece being {lambda^T (z_j - z_i) >= 0}."""
        X, Z = inst.arms, inst.items
        Vinv = inverse_gram((X.T * w) @ X if self.best_response == "agent" else stats.gram)
        _, i, j = closest_piece(theta, Vinv, Z, answer, active | answer, self.m)
        y = Z[j] - Z[i]
        # projection on {lambda^T y >= 0} in the V norm (closed form)
        coef = (y @ theta) / jnp.maximum(y @ Vinv @ y, 1e-300)
        return theta - coef * (Vinv @ y), i, j

    # -- the elimination protocol --------------------------------------------------------------
    @staticmethod
    def linear_stats(state: LinGameState) -> common.LinearStats:
        """Counts, sums, V_{N_t} and b_t of every observation (the elimination protocol)."""
        return state.stats

    def step_masked(self, key, state: LinGameState, inst: Instance, active: jax.Array) -> LinGameState:
        """One round in which nature's best response ranges over the pieces whose challenger j is
        ``active`` [M] (members of the empirical answer always count as active)."""
        X, Z = inst.arms, inst.items
        K, d = X.shape
        dt = X.dtype
        sigma = common.noise_scale(self.sigma, inst)
        tf = state.t.astype(dt)
        theta, Vinv = self._estimate(state.stats)
        answer = state.answer
        # 2. the agent: AdaHedge of answer i_t
        akey = answer_rank(answer, self.m)
        if self.learners == "single":  # one learner for every answer (Tirinzoni & Degenne's code)
            akey = jnp.zeros_like(akey)
        slot, losses, gap = self._lookup(state, akey)
        w = hedge_weights(losses, gap)
        # 3. nature: the closest piece of Alt(i_t) in the V_w norm
        lam, _, _ = self.nature(theta, w, state.stats, inst, answer, active)
        # 4. optimistic gains over C_t = {||xi - theta_hat||^2_{V_t} <= 2 sigma^2 log t}, in units
        # of sigma^2: (|x^T (theta_hat - lambda)| / sigma + sqrt(2 log t) ||x||_{V_t^-1})^2 / 2
        h = jnp.log(tf) if self.optimism else jnp.zeros((), dt)
        q = jnp.maximum(jnp.sum((X @ Vinv) * X, axis=-1), 0.0)  # ||x_k||^2_{V_t^-1}
        width = jnp.sqrt(2.0 * h * (q if self.width == "squared" else jnp.sqrt(q)))
        gains = 0.5 * (jnp.abs(X @ (theta - lam)) / sigma + width) ** 2
        if self.clip_gains:
            gains = jnp.minimum(gains, jnp.log(tf))
        losses, gap = hedge_update(losses, gap, -gains)
        # 5. tracking
        counts = state.stats.counts
        W = state.W + w
        target = W if self.tracking == "C" else tf * w
        arm = common.argmax_fast(target - counts)
        reward = pull(key, inst, arm)
        stats = common.add_pull(state.stats, inst, arm, reward)
        t1 = state.t + 1
        new_answer, z, stop = self._decide(stats, t1, inst)
        return LinGameState(
            stats=stats, t=t1, W=W, keys=state.keys.at[slot].set(akey), used=state.used.at[slot].set(t1),
            losses=state.losses.at[slot].set(losses), gap=state.gap.at[slot].set(gap),
            answer=new_answer, stat=z, stopped=stop)

    # -- the contract --------------------------------------------------------------------------
    def init(self, key, inst: Instance) -> LinGameState:
        X = inst.arms
        K, d = X.shape
        dt = X.dtype
        counts = jnp.ones((K,), dt)
        stats = common.add_counts(common.init_stats(inst), inst, counts, pull_counts(key, inst, counts))
        t = jnp.asarray(K, jnp.int32)
        answer, z, stop = self._decide(stats, t, inst)
        S = self._slots(inst)
        return LinGameState(
            stats=stats, t=t, W=counts, keys=jnp.full((S,), -1, jnp.int64), used=jnp.zeros((S,), jnp.int32),
            losses=jnp.zeros((S, K), dt), gap=jnp.full((S,), self.hedge_delta0, dt),
            answer=answer, stat=z, stopped=stop)

    def step(self, key, state: LinGameState, inst: Instance) -> LinGameState:
        return self.step_masked(key, state, inst, jnp.ones((inst.num_items,), bool))

    def done(self, state: LinGameState) -> jax.Array:
        return state.stopped

    def outcome(self, state: LinGameState, inst: Instance) -> Outcome:
        return Outcome(state.answer, state.t, state.stats.counts.astype(jnp.int32))
