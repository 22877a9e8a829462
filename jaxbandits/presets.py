"""Presets: the settings of a paper's text, of its authors' released code, or of a later paper that
ran an algorithm, each as one :class:`Preset` with its source and the evidence for it, grouped by
paper.  Data only: the algorithms' constructors read them (``LazyTrackAndStop.paper()``,
``Algorithm.released_code()``, ``FWS.tirinzoni_degenne()``, ...), and :func:`table` lists them.

Experiment line-ups (which configurations a figure compares) are the experiments' own, in
``experiments/``.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, NamedTuple


class Preset(NamedTuple):
    """One configuration an algorithm is run with in a paper or in released code.

    Attributes:
      algorithm: the class it configures (its name).
      name: what it is ("paper text", "released code", "Tirinzoni & Degenne 2022, Table 1").
      source: where the settings come from (paper, section, file of the released code).
      settings: field -> value, applied over the class's defaults.
      evidence: what the settings reproduce and how it was checked.
      defaults: field -> value applied unless the caller gives one (the delta of a paper's table).
    """

    algorithm: str
    name: str
    source: str
    settings: Mapping
    evidence: str
    defaults: Mapping = MappingProxyType({})

    def apply(self, **changes) -> dict:
        """The constructor arguments: ``defaults``, then ``settings``, then ``changes``."""
        return {**self.defaults, **self.settings, **changes}


def _frozen(**kw) -> Mapping:
    return MappingProxyType(dict(kw))


# -- Jedra & Proutiere, NeurIPS 2020 (seed 000): Lazy Track-and-Stop --------------------------------
LTS_PAPER = Preset(
    "LazyTrackAndStop", "paper text", "Jedra & Proutiere 2020, Sec 3.4, Sec 5, Algorithm 1",
    _frozen(a0_prior=False, u=1.0, anytime=True, method="paper", warm_start=True, max_iters=1000),
    "No prior, u = 1, beta(6 delta / (pi^2 t^2), t), Frank-Wolfe (seed 001 App F) warm-started from "
    "w(t - 1); the plain constructor's defaults.")
LTS_RELEASED = Preset(
    "LazyTrackAndStop", "released code", "lazy_ts.py (the authors' code behind Table 1)",
    _frozen(a0_prior=True, u=0.1, anytime=False, method="paper", warm_start=False, max_iters=1000),
    "A_0's Gram matrix added once as a ridge prior, u = 0.1, beta(delta, t), Frank-Wolfe restarted from "
    "uniform: the switches that set the sample complexity of Table 1 (the sampling rule is the same); "
    "seed 000 Table 1 is reproduced with them (experiments/seed000_table1.py).")

# -- Fiez, Jain, Jamieson & Ratliff, NeurIPS 2019 (seed 001): the Oracle -----------------------------
ORACLE_RELEASED = Preset(
    "Oracle", "released code", "XY_ORACLE of the released code (the run behind seed 000 Table 1)",
    _frozen(design_method="paper", index_stride=2, check="true_best"),
    "Its Frank-Wolfe design (App F), round r sized by index 1 + 2 (r - 1), and the true best item "
    "checked instead of the empirical one.")

# -- Reda, Kaufmann & Delahaye-Duriez, AISTATS 2021 (seed 003): GIFA, and LinGame as run there -------
GIFA_RELEASED = Preset(
    "GIFA", "released code", "seed 003's released code (Code/)",
    _frozen(stopping_pair="pre_pull", threshold_tail="lambda"),
    "The stopping pair computed before the pull and the lambda S / sigma tail of the threshold: the "
    "behaviour behind the released code's 500-run outputs (seed 003 Table 3).")
LINGAME_SEED003 = Preset(
    "LinGame", "released code (seed 003)", "seed 003's Code/bandits.py (LinGame, LinGame_Heuristic)",
    _frozen(tracking="D", reg=(0.5 / 20.0) ** 2, sigma=1.0, best_response="counts", width="norm"),
    "The LinGame run of seed 003's experiments: D-tracking, ridge (0.5 / 20)^2, nature's best response "
    "in the counts' norm, the optimism width in norm form.")

# -- Tirinzoni & Degenne, NeurIPS 2022: Table 1 ---------------------------------------------------
_TD = "Tirinzoni & Degenne 2022, Table 1 (released code: experiments/linear_bai.jl, runit.jl)"
_TD_DELTA = _frozen(delta=0.01)
TD_LTS = Preset(
    "LazyTrackAndStop", "Tirinzoni & Degenne 2022", _TD + "; sampling_rules.jl LazyTaS",
    _frozen(threshold="log_t", averaging=True, warm_start=True, method="paper", max_iters=1000, a0_prior=False),
    "Lazy updates at powers of 2 warm-started from w(t - 1), cumulative tracking, and the threshold "
    "log((t + 1) / delta) of every test of their experiments (thresholds.jl), not Prop 2 / eq. (9); "
    "not proven delta-correct (no dimension term).", _TD_DELTA)
TD_FWS = Preset(
    "FWS", "Tirinzoni & Degenne 2022", _TD + "; envelope.jl",
    _frozen(threshold="log_t", reg=1.0, glr_form="ridge", game="exact", game_iters=256, max_active=1024),
    "The ridge estimate (reg = 1), every arm once, the GLR of runit.jl with the ridge inverse in the "
    "norm against log((t + 1) / delta); every r-active piece in the matrix game, solved exactly as a "
    "linear program (solveZeroSumGame), here by the simplex method with at most 256 pivots "
    "(game_gap certifies the solution).", _TD_DELTA)
TD_LINGAME = Preset(
    "LinGame", "Tirinzoni & Degenne 2022", _TD,
    _frozen(learners="single", optimism=False, clip_gains=False, tracking="C", reg=1.0, threshold="log_t",
            best_response="agent", width="squared"),
    "One AdaHedge learner for every answer, no optimism and no clipping of the gains, C-tracking, "
    "ridge 1, log((t + 1) / delta); LinGame for m = 1, MisLid for m > 1.", _TD_DELTA)
_TD_GIFA = dict(stopping="glr", initialization=True, reg=1.0, selection="greedy", tie_break="first", epsilon=0.0)
TD_LINGAPE = Preset(
    "GIFA", "Tirinzoni & Degenne 2022 (LinGapE)", _TD,
    _frozen(**_TD_GIFA, index="paired", threshold="td_lingape", compute_J="empirical", compute_b="lucb"),
    "LinGapE (m-LinGapE for m > 1) with the GLR stopping rule, one pull of each arm first, ridge 1, the "
    "greedy selection and the released code's log(t^2 / delta) threshold (td_lingape).", _TD_DELTA)
TD_LINGIFA = Preset(
    "GIFA", "Tirinzoni & Degenne 2022 (LinGIFA)", _TD,
    _frozen(**_TD_GIFA, index="paired", threshold="log_t", compute_J="gap", compute_b="lucb"),
    "LinGIFA with the GLR stopping rule, one pull of each arm first, ridge 1, the greedy selection and "
    "log((t + 1) / delta).", _TD_DELTA)
TD_RAGE = Preset(
    "CumulativeRAGE", "Tirinzoni & Degenne 2022", _TD,
    _frozen(),
    "RAGE with the global ridge estimate of every sample so far: the class's defaults.")
TD_XY_ADAPTIVE = Preset(
    "GlobalXYAdaptive", "Tirinzoni & Degenne 2022", _TD,
    _frozen(),
    "XY-adaptive with the global ridge estimate: the class's defaults.")
TD_ORACLE = Preset(
    "FixedWeightsOracle", "Tirinzoni & Degenne 2022", _TD,
    _frozen(),
    "D-tracking of the true optimal allocation with the ridge GLR stop: the class's defaults.")

#: every preset, grouped by paper in the order above
PRESETS: tuple[Preset, ...] = (LTS_PAPER, LTS_RELEASED, ORACLE_RELEASED, GIFA_RELEASED, LINGAME_SEED003, TD_LTS,
                               TD_FWS, TD_LINGAME, TD_LINGAPE, TD_LINGIFA, TD_RAGE, TD_XY_ADAPTIVE, TD_ORACLE)


def for_algorithm(name: str) -> tuple[Preset, ...]:
    """The presets of the class called ``name``."""
    return tuple(p for p in PRESETS if p.algorithm == name)


def table() -> str:
    """A Markdown table of every preset: the class, the preset, its source, what it changes."""
    rows = ["| algorithm | preset | source | settings | evidence |", "| --- | --- | --- | --- | --- |"]
    for p in PRESETS:
        settings = ", ".join(f"{k}={v!r}" for k, v in {**p.defaults, **p.settings}.items()) or "the defaults"
        rows.append(f"| {p.algorithm} | {p.name} | {p.source} | {settings} | {p.evidence} |")
    return "\n".join(rows)
