"""Frank-Wolfe Sampling (FWS): Wang, Tzeng & Proutiere, "Fast Pure Exploration via Frank-Wolfe",
NeurIPS 2021, Algorithm 1, for (transductive) linear best-arm identification (Sec 5.3, App. on
linear BAI).

The sampling rule runs one Frank-Wolfe step per round on the lower-bound objective
F(x) = min_{j != i*} f_j(x), f_j(x) = inf_{lambda : lambda^T (z_j - z_i*) >= 0} sum_k x_k
KL(x_k^T theta_hat, x_k^T lambda), with x the Frank-Wolfe iterate on the simplex of arms and i* the
empirical best item.  For Gaussian rewards with variance sigma^2 (KL = (.)^2 / (2 sigma^2)) and
d_j = z_i* - z_j, V_x = sum_k x_k a_k a_k^T (the paper's Prop. 1 / envelope form, as the released
code ``alt_min_linear_bai``):

    f_j(x) = (d_j^T theta)^2 / (2 sigma^2 ||d_j||^2_{V_x^-1}),
    grad f_j(x)_k = (d_j^T theta)^2 (a_k^T V_x^-1 d_j)^2 / (2 sigma^2 ||d_j||^4_{V_x^-1}),

and <x, grad f_j(x)> = f_j(x) (degree-one homogeneity).  One round at t pulls (Algorithm 1):

* **Initialisation**: each arm once (t = K), x(K) = uniform (released code).
* **Forced exploration**: if theta_hat has ties (not in the paper's set Lambda) or t is in the
  forced set, z(t) = uniform.  ``forced="squares"`` (default, the experiments: the released code
  tests ``is_complete_square(floor(t / K))``, so every round t in [n^2 K, (n^2 + 1) K) is forced,
  K consecutive rounds each time, among them the K rounds right after the initialisation);
  ``"exact_squares"``: sqrt(t / K) in N (Algorithm 1's text: one round at t = K n^2);
  ``"none"`` switches it off.
* **r-subdifferential step** (eq. (7)-(8)): otherwise, with r_t = t^{-9/10} / K (the experiments'
  value, ``r_scale * t^{-r_exponent} / K``), the r_t-subdifferential H(x, r_t) is the convex hull
  of the gradients of the f_j with f_j(x) < F(x) + r_t, and
  z(t) = argmax_{z in simplex} min_{h in H} <z - x, h>, a matrix game: when one f_j is r-active it
  is the vertex e_k, k = argmax_k grad f_j(x)_k; otherwise the code solves the LP exactly; here a
  fixed number (``game_iters``) of Hedge iterations for the minimising player against best
  responses, returning the average of the best responses (an approximate maximiser: the game value
  is reached within O(range sqrt(log P / game_iters))).  At most ``max_active`` r-active pieces
  (the smallest f_j) enter the game (static shape); the others are dropped.
* **Update and tracking**: x(t + 1) = (1 - 1/t) x(t) + z(t) / t; pull argmax_k x_k(t + 1) / N_k(t)
  (the code's ``argmax(x ./ hw)``).
* **Stopping** (Sec 2, GLR test): Z(t) = min_{j != i*} W_{i*,j} > sigma^2 beta(t, delta), with the
  experiments' beta = log((1 + log t) / delta) (``threshold="heuristic"``; ``"lts"``: seed 000
  eq. (9), proven delta-correct; :mod:`.glr`).  The estimate is the released code's ridge estimate
  theta_hat = (A_t + reg I)^{-1} b_t with reg = 1 (``Vinv`` starts at the identity), and Z(t) is
  the code's envelope form sum_k N_k (a_k^T (theta_hat - lambda_j))^2 / 2 at the alternative
  lambda_j built with W = (A_t + reg I)^{-1}:  Z_j = (d_j^T theta)^2 d_j^T W A_t W d_j /
  (2 (d_j^T W d_j)^2)  (with reg = 0 this is the exact GLR of seed 000 Lemma 7).

Noise scale sigma (``sigma``, else :func:`common.noise_scale`): enters the KL units of f_j and its
gradient (compared with r_t, which is in KL units) and the threshold sigma^2 beta.  With the ridge
prior fixed (not scaled with sigma) the estimate, f_j / sigma^2-units and Z / sigma^2 are
equivariant under (theta, sigma) -> (theta / sigma, 1): exactly sigma-equivariant.

Elimination protocol (docs/design.md, section 5; :class:`~jaxbandits.algorithms.Eliminate`): :meth:`FWS.linear_stats` and :meth:`FWS.step_masked` (the
pieces j of the r-subdifferential range over active items only).

Measured (delta = 0.05, shared 2-core machine at load ~11, compile excluded): Soare d = 2
(omega = 0.01, theta = 2 e_1, sigma = 1): 32 runs, mean 105,003 +- 13,918 pulls, 1.96 +- 0.26 x the
lower bound sigma^2 T* kl(delta, 1 - delta) = 53,532, 0 errors, 0.31 replications/s.  Many arms
K = 1000 (released code's generator, 4 instances x 4 runs): 2,056 +- 7 pulls (34.6 x the bound,
59.4 on average), 0 errors, 0.66 replications/s; with ``forced="exact_squares"`` 1,048 +- 9
(17.6 x): the code's floor(t / K) rule makes the K rounds after the initialisation uniform, and
the initialisation itself costs K pulls.  On the calibration instance hard_top1 (sigma = 1) no
round had two r-active pieces in 3000 pulls (``n_game`` = 0; 93 forced rounds), and
``game_iters`` = 64 vs 512 gave 1086 +- 41 vs 1089 +- 41 pulls (300 runs each, 2 errors each).

The matrix game, certified (``game="certified"``).  The released code solves the game exactly (a
linear program, ``solveZeroSumGame``); Hedge is approximate.  With ``game="certified"`` the Hedge
run also yields the minimising player's average strategy q, and max_k (q^T G)_k - min_j (G z)_j >= 0
bounds how far z's value is from the game's value (weak duality); the largest such gap over the run,
relative to the payoff range, is kept in the state (``game_gap``), so an approximate solve is
reported, never hidden.  With ``game="exact"`` the game is solved as the linear program it is, by
the simplex method (:func:`matrix_game_exact`: at most ``game_iters`` pivots, none on the steps that
need no game), and the same certificate is kept: on the Table 1 instance of Tirinzoni & Degenne it
is at rounding level (below 1e-15 of the payoff range) where 512 Hedge rounds over 16 pieces left
1.7-2.1 %, and a step of 16 lanes costs 1.5-2.4 ms, against 7.9-8.0 ms with those Hedge rounds and
0.9-1.9 ms with no game at all (two measurements on a loaded 2-core CPU, each the minimum of 5).

Tirinzoni & Degenne 2022 (:meth:`FWS.tirinzoni_degenne`, :data:`jaxbandits.presets.TD_FWS`): their Table 1
runs FWS with the ridge estimate (reg = 1), every arm pulled once, and the GLR of their ``runit.jl``
-- (d^T theta)^2 / (2 ||d||^2_{(A_t + I)^{-1}}) (``glr_form="ridge"``), not the envelope form --
against log((t + 1) / delta) (``threshold="log_t"``, :mod:`.glr`); their ``envelope.jl`` puts every
r-active piece into the game and solves it exactly (``game="exact"``, no cap on the pieces).
"""
from __future__ import annotations

import dataclasses

import jax

from jaxbandits.algorithms.base import hyperparameter
from jaxbandits import presets
from jaxbandits.algorithms import glr
from jaxbandits.design.games import EXACT_GAME_GAP, is_square  # noqa: F401 (also used from here)
from jaxbandits.design.games import matrix_game, matrix_game_certified, matrix_game_exact  # noqa: F401
from jaxbandits.instances.base import Instance
from jaxbandits.rules import sampling, stopping
from jaxbandits.rules.composition import Composed, Composition
from jaxbandits.rules.sampling import FORCED, GAMES
from jaxbandits.rules.stopping import GLR_FORMS, envelope_glr  # noqa: F401 (also used from here)

#: FWS as run in Tirinzoni & Degenne 2022, Table 1 (released code ``experiments/linear_bai.jl``,
#: ``runit.jl``): log((t + 1) / delta) threshold, ridge GLR; the matrix game over every r-active
#: piece solved exactly as a linear program, as the released ``envelope.jl`` (``solveZeroSumGame``)
#: does: :func:`matrix_game_exact`, at most 256 simplex pivots (``game_gap`` certifies the solution)
TIRINZONI_DEGENNE = presets.TD_FWS.settings


@dataclasses.dataclass(frozen=True)
class FWS(Composed):
    """Frank-Wolfe Sampling (Wang et al. 2021, Algorithm 1; module docstring for every choice): the
    composition of :class:`jaxbandits.rules.sampling.Initial` (each arm once) around
    :class:`jaxbandits.rules.sampling.FrankWolfe` and :class:`jaxbandits.rules.stopping.EmpiricalGLR`
    (:meth:`rules`).

    Attributes:
      delta: confidence level.
      threshold: "heuristic" (experiments: log((1 + log t) / delta)) or "lts" (seed 000 eq. (9)).
      reg: ridge parameter of the estimate and of the GLR (released code: 1).
      r_scale, r_exponent: r_t = r_scale t^{-r_exponent} / K (experiments: 1, 9/10).
      forced: "squares" (uniform z when floor(t / K) is a perfect square: the released code),
        "exact_squares" (when t / K is a perfect square: the text) or "none".
      max_active: cap on the r-active pieces entering the matrix game (static; at most the number
        of items is used).
      game_iters: Hedge iterations of the matrix game, or with ``game="exact"`` the cap on the
        simplex's pivots (static).
      sigma: sub-Gaussian noise scale (default :func:`common.noise_scale`).
      glr_form: "envelope" (Wang et al.'s released code, module docstring) or "ridge" (the GLR
        with the ridge inverse, Tirinzoni & Degenne's code).
      game: "hedge", "certified" (Hedge plus its duality-gap certificate, ``game_gap``) or "exact"
        (the linear program solved by the simplex method, :func:`matrix_game_exact`, with the same
        certificate).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    threshold: str = "heuristic"
    reg: float = hyperparameter(1.0, low=0.0, low_open=False, traced=True)
    r_scale: float = hyperparameter(1.0, low=0.0, traced=True)
    r_exponent: float = hyperparameter(0.9, traced=True)
    forced: str = "squares"
    max_active: int = hyperparameter(8, count=1)
    game_iters: int = hyperparameter(64, count=1)
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)
    glr_form: str = "envelope"
    game: str = "hedge"


    @classmethod
    def tirinzoni_degenne(cls, **kw) -> "FWS":
        """FWS as in Tirinzoni & Degenne 2022's Table 1 (:data:`jaxbandits.presets.TD_FWS`, module
        docstring); delta = 0.01 as there unless given.  ``kw`` overrides."""
        return cls(**presets.TD_FWS.apply(**kw))

    def __post_init__(self):
        glr.check_threshold(self.threshold)
        if self.forced not in FORCED:
            raise ValueError(f"forced must be one of {FORCED}, got {self.forced!r}")
        for field in ("max_active", "game_iters"):
            if int(getattr(self, field)) < 1:
                raise ValueError(f"FWS.{field} must be an integer >= 1, got {getattr(self, field)!r}")
        if self.glr_form not in GLR_FORMS:
            raise ValueError(f"glr_form must be one of {GLR_FORMS}, got {self.glr_form!r}")
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}, got {self.game!r}")

    def rules(self) -> Composition:
        """The composition these options make (module docstring)."""
        fw = sampling.FrankWolfe(r_scale=self.r_scale, r_exponent=self.r_exponent, forced=self.forced,
                                 max_active=self.max_active, game_iters=self.game_iters, game=self.game)
        return Composition(sampling.Initial(fw, first="all"),
                           stopping.EmpiricalGLR(threshold=self.threshold, reg=self.reg, form=self.glr_form),
                           delta=self.delta, sigma=self.sigma, name="FWS")

    def frank_wolfe_direction(self, state, instance: Instance, active: jax.Array):
        """(z(t) [K], forced, game) of Algorithm 1 at the current state (module docstring), the
        pieces ranging over the ``active`` items."""
        comp = self.composition()
        return comp.sampling.then.direction(state.sampling.then, state.belief, comp.context(instance, active))[:3]
