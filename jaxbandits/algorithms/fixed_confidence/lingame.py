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
from typing import ClassVar

from jaxbandits.algorithms.base import display_name, hyperparameter
from jaxbandits.design.games import hedge_update, hedge_weights  # noqa: F401 (also used from here)
from jaxbandits.instances.base import Instance
from jaxbandits import presets
from jaxbandits.rules import sampling, stopping, thresholds
from jaxbandits.rules.alternative import answer_rank, closest_piece  # noqa: F401 (also used from here)
from jaxbandits.rules.composition import Composed, Composition

THRESHOLDS = thresholds.names("lingame")  # jaxbandits.rules.thresholds.ALIASES
LEARNERS = sampling.GAME_LEARNERS

#: LinGame / MisLid in Tirinzoni & Degenne 2022's Table 1 (module docstring)
TIRINZONI_DEGENNE = presets.TD_LINGAME.settings
TRACKINGS = sampling.GAME_TRACKINGS

#: the LinGame run of seed 003's released code (Code/bandits.py ``LinGame``, ``LinGame_Heuristic``)
SEED003_CODE = presets.LINGAME_SEED003.settings
BEST_RESPONSES = sampling.BEST_RESPONSES
WIDTHS = sampling.GAME_WIDTHS


# ------------------------------------------------------------------------------------------------
# the algorithm
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LinGame(Composed):
    """LinGame (Degenne et al. 2020, Sec 3, the learners and stopping rule of Sec 6) for best-arm
    identification (m = 1) and Top-m identification (m > 1): the composition of :meth:`rules`
    (each arm once, the game of :class:`jaxbandits.rules.sampling.Game`, the GLR of
    :class:`jaxbandits.rules.stopping.GameGLR`).

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

    def rules(self) -> Composition:
        """Each arm once (all before the first step), then the game
        (:class:`~jaxbandits.rules.sampling.Game`), stopped by :class:`~jaxbandits.rules.stopping.GameGLR`."""
        game = sampling.Game(m=self.m, reg=self.reg, hedge_delta0=self.hedge_delta0, learners=self.learners,
                             learner_slots=self.learner_slots, tracking=self.tracking,
                             best_response=self.best_response, width=self.width, optimism=self.optimism,
                             clip=self.clip_gains)
        return Composition(sampling.Initial(game, first="batch"),
                           stopping.GameGLR(m=self.m, threshold=self.threshold, reg=self.reg, S=self.S),
                           delta=self.delta, sigma=self.sigma, name=self.name)

    def validate(self, instance: Instance) -> None:
        """Host-side checks: linear rewards (Sec 2), a positive sigma and regulariser, and a
        number of answers whose keys fit in int64."""
        if isinstance(self.reg, (int, float)) and not self.reg > 0:
            raise ValueError(f"reg must be positive, got {self.reg}")
        super().validate(instance)

    def nature(self, theta, w, stats, instance: Instance, answer, active):
        """Nature's best response (:meth:`jaxbandits.rules.sampling.Game.nature`)."""
        return self.composition().sampling.then.nature(theta, w, stats, instance, answer, active)
