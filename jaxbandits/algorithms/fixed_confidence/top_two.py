"""Top Two for (transductive) linear bandits with the GLR stopping rule, and its epsilon-best-answer
version.

Sources: Jourdan, Degenne, Baudry, de Heide, Kaufmann, "Top Two algorithms revisited", NeurIPS 2022
(arXiv 2206.05979; Sec 2, Algorithm 1: leader, challenger, beta); Jourdan & Degenne, "Choosing
answers in epsilon-best-answer identification for linear bandits", ICML 2022 (arXiv 2206.04456;
Sec 2 epsilon-alternative and GLR, Sec 3 the furthest answer, Sec 4-5 the linear sampling).

Initialisation (``initial=``): ``"all"`` (default) pulls each arm once, as the experiments' code
does (it makes V_t invertible when the arms span; K pulls, which dominates on many-arms instances);
``"spanning"`` pulls d arms drawn at random among those that increase the rank (seed 000 Lemma 5's
A_0, :func:`.track_and_stop.random_spanning_set`).  Then, one round:

* **Leader** B_t (Top Two revisited Sec 2.1): ``leader="EB"`` (default) the candidate answer
  computed after the previous pull: with ``answer="furthest"`` (default; Jourdan & Degenne Sec 3)
  the furthest answer argmax_i min_{j != i} W^eps_{i,j} (the answer whose epsilon-alternative is
  furthest in GLR, i.e. the one the stopping rule certifies), which is the empirical best item
  when eps = 0; ``answer="best"`` the empirical best item (shown not asymptotically optimal for
  eps > 0 in Sec 3).  ``leader="TS"``: argmax_i z_i^T theta~, theta~ ~ N(theta_hat, sigma^2 V_t^-1)
  (Thompson sampling leader, Top Two revisited Sec 2.1 / TTTS).
* **Challenger** C_t = argmin_{j != B_t} W^eps_{B_t, j}, the transportation cost (TC) challenger
  (Top Two revisited eq. (4)), W^eps_{i,j} = (theta^T (z_i - z_j) + eps)_+^2 / (2 ||z_i - z_j||^2_{V_t^-1})
  (:mod:`.glr`).  It ranges over the active items (elimination protocol).
* **Allocation** between leader and challenger (``allocation=``):
  - ``"design"`` (default, the linear construction): the pair direction y_t = z_B - z_C is what
    the GLR against the challenger needs, and the allocation minimising ||y_t||^2_{V^-1} is the
    c-optimal design w(y_t) (Elfving); the arms are chosen by tracking the cumulative designs,
    argmin_k N_k(t) - sum_{s <= t} w_k(y_s) (C-tracking, Jourdan & Degenne Sec 4-5 track an
    optimal design).  w(y_t) comes from :func:`jaxbandits.design.copt.c_optimal`
    (``design_iters`` Frank-Wolfe steps with exact line search, warm-started from w(y_{t-1})).
    In the unstructured case (arms = items = e_i) w(e_B - e_C) puts 1/2 on B and 1/2 on C: the
    Top Two rule with beta = 1/2, the Top Two revisited default.
  - ``"greedy"``: the one-step version, pull argmax_k (x_k^T V^-1 y_t)^2 / (1 + x_k^T V^-1 x_k)
    (the arm that most reduces ||y_t||^2_{V^-1}; seed 003's greedy selection).
  - ``"arms"``: the unstructured Top Two of Top Two revisited Algorithm 1 (needs arms = items):
    pull B_t with probability ``beta``, else C_t.  ``beta`` (default 1/2) is read only here; in
    the linear allocations the design fixes the split.
* **Stopping** (GLR, Jourdan & Degenne Sec 2, Top Two revisited Sec 2.2): stop when
  max_i min_{j != i} W^eps_{i,j} > sigma^2 beta(t, delta) (over the answer choice above) and
  recommend that answer; beta = log((1 + log t) / delta) as in both papers' experiments
  (``threshold="heuristic"``; ``"lts"``: seed 000 eq. (9), proven delta-correct).

The furthest answer is searched among the ``fa_candidates`` items of largest empirical value
(static); it is exact whenever at most that many items are empirically eps-good, since every other
item i has min_j W^eps_{i,j} = 0.

Noise scale sigma: enters the TS posterior sigma^2 V_t^-1 and the threshold sigma^2 beta; the
leader/challenger argmins, the designs and the tracking are scale-free.  The estimate is least
squares (``reg`` = 0; any fixed ridge keeps sigma-equivariance).

Elimination protocol (docs/design.md, section 5; :class:`~jaxbandits.algorithms.Eliminate`): :meth:`TopTwo.linear_stats`, :meth:`TopTwo.step_masked`.

Measured (delta = 0.05, shared 2-core machine at load ~11, compile excluded): Soare d = 2
(omega = 0.01, theta = 2 e_1, sigma = 1): 32 runs, mean 97,514 +- 11,867 pulls, 1.82 +- 0.22 x the
lower bound 53,532, 0 errors, 0.39 replications/s.  Many arms K = 1000 (released code's generator,
4 instances x 4 runs): 1,075 +- 18 pulls (18.1 x the bound, 59.4 on average; 1000 of them the
initialisation), 0.80 replications/s; with ``initial="spanning"`` (4 x 16 runs) 106.8 +- 8.3 pulls,
1.80 +- 0.14 x the bound, 0/64 errors, 4.5 replications/s.
"""
from __future__ import annotations

import dataclasses

from jaxbandits.algorithms.base import hyperparameter
from jaxbandits.algorithms import glr
from jaxbandits.rules import recommend, sampling, stopping
from jaxbandits.rules.composition import Composed, Composition
from jaxbandits.rules.recommend import answer_glr  # noqa: F401 (its old home)

LEADERS = ("EB", "TS")
ANSWERS = ("furthest", "best")
ALLOCATIONS = ("design", "greedy", "arms")
INITS = ("all", "spanning")


@dataclasses.dataclass(frozen=True)
class TopTwo(Composed):
    """Top Two (leader / TC challenger) for linear bandits with GLR stopping (module docstring): the
    composition of :class:`jaxbandits.rules.sampling.Initial` around
    :class:`jaxbandits.rules.sampling.TopTwo` and :class:`jaxbandits.rules.stopping.TransportGLR`
    (:meth:`rules`).

    Attributes:
      delta: confidence level.
      epsilon: slack of epsilon-best-answer identification (0: best-arm identification).
      beta: leader probability of the unstructured allocation ``"arms"`` (default 1/2).
      leader: "EB" (the candidate answer) or "TS" (Thompson sampling).
      answer: "furthest" (Jourdan & Degenne Sec 3) or "best" (empirical best), for the candidate
        answer, the leader under "EB" and the recommendation.
      allocation: "design" (tracking of the c-optimal design of z_B - z_C), "greedy", or "arms".
      design_iters: Frank-Wolfe iterations per round of the pair design (static).
      threshold: "heuristic" (experiments) or "lts" (seed 000 eq. (9)).
      reg: ridge parameter of the estimate (0: least squares).
      fa_candidates: items searched for the furthest answer (static).
      initial: "all" (each arm once) or "spanning" (d arms of a random spanning set).
      sigma: sub-Gaussian noise scale (default :func:`common.noise_scale`).
    """

    delta: float = hyperparameter(0.05, low=0.0, high=1.0, traced=True)
    epsilon: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)
    beta: float = hyperparameter(0.5, low=0.0, high=1.0, traced=True)
    leader: str = "EB"
    answer: str = "furthest"
    allocation: str = "design"
    design_iters: int = hyperparameter(16, count=1)
    threshold: str = "heuristic"
    reg: float = hyperparameter(0.0, low=0.0, low_open=False, traced=True)
    fa_candidates: int = hyperparameter(16, count=1)
    initial: str = "all"
    sigma: float | None = hyperparameter(None, low=0.0, traced=True)


    def __post_init__(self):
        glr.check_threshold(self.threshold)
        for name, val, allowed in (("leader", self.leader, LEADERS), ("answer", self.answer, ANSWERS),
                                   ("allocation", self.allocation, ALLOCATIONS), ("initial", self.initial, INITS)):
            if val not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {val!r}")

    def rules(self) -> Composition:
        """The composition these options make (module docstring)."""
        leader = sampling.TSLeader() if self.leader == "TS" else sampling.EBLeader()
        allocation = {"design": lambda: sampling.PairDesign(iters=self.design_iters),
                      "greedy": sampling.GreedyPair,
                      "arms": lambda: sampling.LeaderCoin(beta=self.beta)}[self.allocation]()
        answer = (recommend.FurthestAnswer(candidates=self.fa_candidates) if self.answer == "furthest"
                  else recommend.EmpiricalBest())
        return Composition(sampling.Initial(sampling.TopTwo(leader, allocation), first=self.initial),
                           stopping.TransportGLR(threshold=self.threshold, reg=self.reg, recommend=answer),
                           delta=self.delta, epsilon=self.epsilon, sigma=self.sigma, name="TopTwo")

    def leader_challenger(self, key, state, instance, active):
        """(B_t, C_t) of the module docstring at the current state, the challenger over the
        ``active`` items."""
        comp = self.composition()
        ctx = comp.context(instance, active)
        lead = comp.sampling.then.leader(key, state.belief, ctx)
        return lead, sampling.tc_challenger(lead, state.belief, ctx)
