"""Statistics of Monte Carlo studies: exact binomial intervals and tests, Bernoulli KL, summaries.

Host-side helpers (NumPy in, Python floats out) used by the engine's summaries, the tests'
statistical checks and the experiments.  The regularised incomplete beta function comes from
``scipy.stats`` (beta quantiles, binomial tail), declared in ``pyproject.toml``.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
import scipy.stats as _st


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided confidence interval for a binomial proportion k / n
    (beta quantiles from ``scipy.stats``)."""
    k, n = int(k), int(n)
    if n <= 0:
        return (0.0, 1.0)
    alpha = 1.0 - level
    lo = 0.0 if k == 0 else float(_st.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return (lo, hi)


def binomial_test_upper(k: int, n: int, p0: float) -> float:
    """One-sided p-value of H0: "rate <= p0" against "rate > p0", having seen k events in n trials:
    P(Binomial(n, p0) >= k) (``scipy.stats.binom``).

    Used for delta-correctness: reject (the algorithm errs more often than delta) when the p-value
    is below the test level.
    """
    k, n = int(k), int(n)
    if k <= 0:
        return 1.0
    return float(_st.binom.sf(k - 1, n, float(p0)))


def kl_bernoulli(p, q):
    """kl(p, q) = p log(p / q) + (1 - p) log((1 - p) / (1 - q)), the Bernoulli KL divergence
    (0 log 0 = 0).  Python or NumPy numbers give a Python float; JAX arrays (traced ones too, as in
    :func:`jaxbandits.design.lower_bound` under ``jit``) give a JAX array."""
    if isinstance(p, numbers.Real) and isinstance(q, numbers.Real):
        def term(a, b):
            return 0.0 if a == 0 else a * math.log(a / b)
        return term(p, q) + term(1 - p, 1 - q)
    import jax.numpy as jnp
    from jax.scipy.special import xlogy

    p = jnp.asarray(p, jnp.result_type(float))
    q = jnp.asarray(q, jnp.result_type(float))
    return xlogy(p, p / q) + xlogy(1 - p, (1 - p) / (1 - q))


def welch_test(mean: float, sd: float, n: int, ref_mean: float, ref_sd: float, ref_n: int) -> float:
    """Two-sided p-value of "same mean" from two samples' means, standard deviations and sizes:
    Welch's t-test (``scipy.stats.ttest_ind_from_stats`` with ``equal_var=False``).  Two samples
    without spread give 1 when their means are equal, 0 otherwise."""
    if sd == 0 and ref_sd == 0:
        return 1.0 if mean == ref_mean else 0.0
    return float(_st.ttest_ind_from_stats(mean, sd, n, ref_mean, ref_sd, ref_n, equal_var=False).pvalue)


def summarize(samples: np.ndarray, correct: np.ndarray, stopped: np.ndarray, level: float = 0.95,
              error_defined: bool = True) -> dict:
    """Summary of a set of runs that hides nothing about capped runs.

    A run that hit the step cap did not stop: it is never counted as a stop, and its sample count
    (the pulls made so far) is only a lower bound on its stopping time.  Reported:

    * ``mean``, ``std``, ``se`` and quantiles over the runs that stopped (``stopped`` of ``runs``);
    * ``frac_capped``: the fraction of runs that hit the cap;
    * ``mean_counting_capped``: the mean over *all* runs with each capped run counted at the pulls
      it had made.  Since a capped run's stopping time is at least that, this is a lower bound on
      the mean stopping time of all runs (not the information-theoretic lower bound
      sigma^2 T* kl(delta, 1 - delta)); when ``frac_capped > 0`` the stopped-run ``mean`` is biased
      low (the capped runs are the slow ones) and ``mean_counting_capped`` is the honest figure;
    * ``error_rate`` with its Clopper-Pearson interval over the runs that stopped (a capped run
      returned no answer), or ``None`` (printed "n/a") when ``error_defined`` is False: the
      answer is correct by construction (e.g. an oracle that returns the true best arm), so an
      error rate of 0 would say nothing.
    """
    samples = np.asarray(samples, dtype=float).ravel()
    correct = np.asarray(correct, dtype=bool).ravel()
    stopped = np.asarray(stopped, dtype=bool).ravel()
    s = samples[stopped]
    n = int(stopped.sum())
    errors = int((~correct[stopped]).sum())
    lo, hi = clopper_pearson(errors, n, level)
    q = np.quantile(s, [0.05, 0.25, 0.5, 0.75, 0.95]) if n else [np.nan] * 5
    if not error_defined:
        err, lo, hi = None, None, None
    else:
        err = errors / n if n else float("nan")
    return dict(
        runs=int(samples.size),
        stopped=n,
        mean=float(s.mean()) if n else float("nan"),
        std=float(s.std(ddof=1)) if n > 1 else float("nan"),
        se=float(s.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan"),
        q05=float(q[0]), q25=float(q[1]), median=float(q[2]), q75=float(q[3]), q95=float(q[4]),
        error_rate=err,
        error_lo=lo,
        error_hi=hi,
        frac_capped=float(1.0 - n / samples.size) if samples.size else float("nan"),
        mean_counting_capped=float(samples.mean()) if samples.size else float("nan"),
    )


def _fmt(x, unit: str = "") -> str:
    """A number as a person reads it: integers in full with thousands separators, floats to four
    significant digits (whole numbers from 1,000 on), None as "n/a"."""
    if x is None:
        return "n/a"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}{unit}"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}{unit}"
    return f"{x:.4g}{unit}"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Summary(dict):
    """Summary statistics of a set of replications (:meth:`jaxbandits.engine.Results.summary`).

    Printed (``str`` or ``repr``) it is a table, one line per field under the field's own name, with
    four significant digits; the fields hold the full-precision numbers.  It is also a read-only
    ``dict`` of the same fields (``s["mean"]``, ``"se" in s``, ``json.dumps(s)``, a row of a
    DataFrame), so code written against the former plain dict keeps working.

    Attributes (over the replications that ran):
      runs, stopped: replications, and those that stopped by their own rule.
      mean, std, se, q05, q25, median, q75, q95: sample complexity over the runs that stopped.
      error_rate, error_lo, error_hi: errors among the runs that stopped, with the Clopper-Pearson
        interval at ``level``; None when the answer is correct by construction.
      frac_capped: fraction of runs that hit ``max_steps`` (their counts are lower bounds).
      mean_counting_capped: mean over all runs, capped ones counted at their pulls so far (a lower
        bound on the mean stopping time).
      results: replications per :class:`~jaxbandits.engine.RESULTS` code (lower-case names).
      wall_time, compile_time: seconds running and compiling; efficiency: useful lane-steps / lane-
        steps executed; steps_per_second: useful steps per second of wall time.
      level: the confidence level of the error interval (an attribute, not a key).
    """

    runs: int
    stopped: int
    mean: float
    std: float
    se: float
    q05: float
    q25: float
    median: float
    q75: float
    q95: float
    error_rate: float | None
    error_lo: float | None
    error_hi: float | None
    frac_capped: float
    mean_counting_capped: float
    results: dict = dataclasses.field(default_factory=dict)
    wall_time: float = math.nan
    compile_time: float = math.nan
    efficiency: float = math.nan
    steps_per_second: float = math.nan
    level: float = 0.95

    # -- the dict view (the keys of the former dict), read-only ----------------------------------
    def __post_init__(self):
        dict.update(self, {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "level"})

    def _read_only(self, *args, **kwargs):
        raise TypeError("a Summary is read-only (its printed table shows its fields); copy it with dict(s)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _read_only

    def __reduce__(self):  # pickle and copy rebuild it from its fields
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    # -- the printed table ----------------------------------------------------------------------
    def lines(self) -> list[tuple[str, str, str]]:
        """(field, value as printed, what it is) for every line of the table."""
        pct = f"{100 * self.level:g}%"
        if self.error_rate is None:
            err = ("error_rate", "n/a", "the answer is correct by construction")
        else:
            n = int(self.stopped)
            err = ("error_rate", _fmt(self.error_rate),
                   f"{_fmt(round(self.error_rate * n) if n else 0)} wrong of {_fmt(n)} stopped runs; {pct} "
                   f"Clopper-Pearson error_lo, error_hi = {_fmt(self.error_lo)}, {_fmt(self.error_hi)}")
        quant = ", ".join(_fmt(getattr(self, q)) for q in ("q05", "q25", "median", "q75", "q95"))
        codes = ", ".join(f"{k} {_fmt(v)}" for k, v in self.results.items())
        return [
            ("runs", _fmt(self.runs), "replications"),
            ("stopped", _fmt(self.stopped), "stopped by their own rule (fixed budget: spent it)"),
            ("mean", _fmt(self.mean), "samples (pulls), mean over the stopped runs"),
            ("se", _fmt(self.se), "standard error of the mean"),
            ("std", _fmt(self.std), "standard deviation"),
            ("q05 q25 median q75 q95", quant, "quantiles of the samples"),
            err,
            ("frac_capped", _fmt(self.frac_capped), "fraction of runs that hit max_steps (never counted as stops)"),
            ("mean_counting_capped", _fmt(self.mean_counting_capped),
             "mean over all runs, capped ones at their pulls so far (a lower bound)"),
            ("results", codes, "replications per result code (RESULTS)"),
            ("wall_time", _fmt(self.wall_time, " s"), "running (compilation excluded)"),
            ("compile_time", _fmt(self.compile_time, " s"), "compiling"),
            ("efficiency", _fmt(self.efficiency), "useful lane-steps / lane-steps executed"),
            ("steps_per_second", _fmt(self.steps_per_second), "useful steps per second"),
        ]

    def __str__(self) -> str:
        rows = self.lines()
        w0 = max(len(r[0]) for r in rows)
        w1 = min(12, max(len(r[1]) for r in rows))  # a long value (quantiles, codes) pushes its note only
        body = [f"  {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
        return "\n".join([f"Summary of {_fmt(self.runs)} replications"] + body)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):  # IPython / Jupyter: the table too, not its dict printer
        p.text(str(self))
