"""Per-replication results of :func:`jaxbandits.engine.simulate` and their summaries."""
from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

import numpy as np

from jaxbandits.stats import Summary, summarize

if TYPE_CHECKING:
    from jaxbandits.engine.layout import Layout


class RESULTS(enum.IntEnum):
    """How a replication ended (:attr:`Results.result`, one code per replication; in the way
    optimistix reports a solve's ``RESULTS``)."""

    #: stopped by its own rule (fixed confidence) or spent its budget (fixed budget)
    STOPPED = 0
    #: reached ``max_steps`` without stopping: its sample count is a lower bound, it has no answer
    CAPPED = 1
    #: its sample count was not finite, beyond :data:`COUNT_LIMIT`, or negative (a 32-bit counter
    #: that wrapped past 2**31 - 1): the count was lost and reads as :data:`COUNT_LIMIT`
    NON_FINITE = 2
    #: stopped, but a solver or sampler with a fixed trip count it relied on ended before its
    #: certificate (:attr:`Outcome.converged` False): the run is not the algorithm's as specified
    NOT_CONVERGED = 3


@dataclasses.dataclass
class Results:
    """Per-replication results of :func:`simulate`, arrays with leading axes [n_instances, n_reps].

    Attributes:
      samples: number of pulls used (stopping time, or budget spent); for runs that hit the cap,
        the pulls made so far (a lower bound: ``stopped`` is False).
      steps: number of ``step`` calls (decisions or phases).
      correct: the answer is (epsilon, m)-correct.
      stopped: the algorithm stopped by itself before ``max_steps``.
      answer: [.., M] bool mask of the returned items.
      pulls: [.., K] per-arm pulls (None unless ``record_pulls``).
      ran: which replications this call ran (all, unless ``tasks`` restricted it).
      efficiency: useful replication-steps / lane-steps executed (1 = no idle lanes).
      wall_time: seconds spent running (compilation excluded), compile_time: seconds compiling
        (the chunk runner, and the per-instance programs of ``prepare``).
      lane_steps: lane-steps executed; useful_steps: replication-steps done.
      devices, lanes, chunk_size: how the run was laid out.
      layout: the :class:`Layout` chosen (platform, lanes, chunk, solve batching, memory).
      error_defined: False when the algorithm's answer is correct by construction
        (``Algorithm.correct_by_construction``); summaries then report the error rate as n/a.
      precision: "float64" or "float32" (:mod:`jaxbandits.precision`).
      num_arms, num_items: the real K and M (of the instances given); bucket: (K, M) of the
        padded instances the program ran on (shape buckets), None when not padded.
      converged: [.., n_reps] bool, :attr:`Outcome.converged` of every replication (True for
        algorithms without fixed-trip solvers); None where results were built without it.
    """

    samples: np.ndarray
    steps: np.ndarray
    correct: np.ndarray
    stopped: np.ndarray
    answer: np.ndarray
    pulls: np.ndarray | None
    ran: np.ndarray
    efficiency: float
    wall_time: float
    compile_time: float
    lane_steps: int
    useful_steps: int
    devices: int
    lanes: int
    chunk_size: int
    error_defined: bool = True
    layout: Layout | None = None
    precision: str = "float64"
    num_arms: int | None = None
    num_items: int | None = None
    bucket: tuple[int, int] | None = None
    converged: np.ndarray | None = None

    @property
    def n_instances(self) -> int:
        return self.samples.shape[0]

    @property
    def n_reps(self) -> int:
        return self.samples.shape[1]

    @property
    def result(self) -> np.ndarray:
        """[.., n_reps] int8 :class:`RESULTS` code of every replication (a replication that did not
        run, ``ran`` False, reads as CAPPED).  Precedence: NON_FINITE, then CAPPED, then
        NOT_CONVERGED, then STOPPED."""
        code = np.where(self.stopped, RESULTS.STOPPED, RESULTS.CAPPED)
        if self.converged is not None:
            code = np.where(self.stopped & ~self.converged, RESULTS.NOT_CONVERGED, code)
        return np.where(self.samples >= COUNT_LIMIT, RESULTS.NON_FINITE, code).astype(np.int8)

    def summary(self, level: float = 0.95) -> Summary:
        """Sample-complexity statistics, error rate with Clopper-Pearson interval, capped
        fraction, wall time and lane efficiency over the replications that ran, and ``results``:
        how many of them ended with each :class:`RESULTS` code (by lower-case name).  A
        :class:`~jaxbandits.stats.Summary`: a table when printed, the numbers as its fields, and a
        mapping (``summary()["mean"]``)."""
        r = self.ran
        out = summarize(self.samples[r], self.correct[r], self.stopped[r], level,
                        error_defined=self.error_defined)
        codes = self.result[r]
        return Summary(**out, results={c.name.lower(): int(np.sum(codes == c)) for c in RESULTS},
                       wall_time=self.wall_time, compile_time=self.compile_time, efficiency=self.efficiency,
                       steps_per_second=self.useful_steps / self.wall_time if self.wall_time > 0 else float("nan"),
                       level=level)

    def rows(self) -> list[dict]:
        """One dict per replication that ran (instance, rep, samples, steps, correct, stopped,
        answer as the index list of returned items)."""
        out = []
        J, R = self.samples.shape
        for j in range(J):
            for i in range(R):
                if not self.ran[j, i]:
                    continue
                out.append(dict(instance=j, rep=i, samples=int(self.samples[j, i]),
                                steps=int(self.steps[j, i]), correct=bool(self.correct[j, i]),
                                stopped=bool(self.stopped[j, i]),
                                answer=" ".join(map(str, np.flatnonzero(self.answer[j, i])))))
        return out


#: where recorded counts saturate: a phase-based algorithm that never stops (a capped run) can
#: reach ceil(gamma^t) ~ 1e49 samples or inf in float, which an int64 cast would wrap to -2^63
COUNT_LIMIT = 2**62


def _counts(x) -> np.ndarray:
    """Sample / pull counts (floats or 32-bit integers in the algorithms' states) as int64,
    saturated at :data:`COUNT_LIMIT` where the count was lost: NaN or inf (only a run that lost
    its count can have one), beyond the limit, or negative (a 32-bit counter incremented past
    2**31 - 1 wraps to a negative number; the validation keeps step caps and budgets within
    2**31 - 1, so such a counter cannot wrap back to a non-negative value)."""
    x = np.asarray(x, np.float64)
    return np.where(np.isfinite(x) & (x < COUNT_LIMIT) & (x >= 0), x, COUNT_LIMIT).astype(np.int64)
