"""A fixed-confidence algorithm run with a budget (seed 002 Sec 8 and App F: LinGapE "stopped at
the budget limit", with delta chosen by grid search over :data:`LINGAPE_DELTA_GRID`)."""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax

from jaxbandits.algorithms.base import Wrapper, hyperparameter
from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE
from jaxbandits.instances.base import Instance


@dataclasses.dataclass(frozen=True)
class BudgetCapped(Wrapper):
    """A fixed-confidence algorithm run with a budget: it stops on its own stopping rule or when
    B pulls are spent, and recommends its current answer (seed 002 Sec 8 / App F: "LinGapE is used
    with its stopping rule at the budget limit").

    The inner algorithm's state must expose the number of pulls made as ``state.t`` (as
    :class:`jaxbandits.algorithms.top_m.gifa.GIFA` does), and its steps must pull one arm each.

    Attributes:
      inner: the fixed-confidence algorithm (e.g. ``LinGapE(delta)``).
      budget: B.
    """

    inner: Any
    budget: int = hyperparameter(low=0.0, pulls=True, traced=True)

    needs_span: ClassVar[bool] = False
    fixed_budget: ClassVar[bool] = True

    def validate(self, instance: Instance) -> None:
        super().validate(instance)
        if int(self.budget) < instance.num_arms:
            raise ValueError(f"budget B = {self.budget} is below K = {instance.num_arms}")

    def steps_needed(self, instance, dim=None) -> int:
        """Engine steps a run takes (:class:`~jaxbandits.algorithms.base.StepsNeeded`): one pull each."""
        return int(self.budget)

    def done(self, state) -> jax.Array:
        return self.inner.done(state) | (state.t >= self.budget)


def lingape_budgeted(budget: int, delta: float, **kw) -> BudgetCapped:
    """LinGapE (Xu et al. 2018, :class:`jaxbandits.algorithms.fixed_confidence.lingape.LinGapE`) capped at budget B."""
    return BudgetCapped(LinGapE(delta, **kw), int(budget))


LINGAPE_DELTA_GRID = (0.9, 0.5, 0.1, 0.01, 0.001)
"""The delta grid of the LinGapE baseline (seed 002 App F tunes delta by grid search and reports
the best; the grid values are not given there, these are ours)."""
