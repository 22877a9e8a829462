"""Markdown tables of result rows: the one formatter of the experiments' summaries and of the
calibration and benchmark reports; and the one comparison of a reproduced number with a published
one (:func:`paper_check`, :func:`paper_check_rate`, :func:`paper_notes`), which every experiment that
prints a paper's number beside its own uses to flag a disagreement and say its known cause."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def fmt(v: Any) -> str:
    """A cell: "n/a" for None, "-" for NaN, 4 significant digits (3 in scientific notation for
    magnitudes >= 1e5 or < 1e-3)."""
    if v is None:
        return "n/a"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "-"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return str(v)


def markdown_table(rows: list[dict]) -> str:
    """A Markdown table with a column per key (in order of first appearance) and a line per row."""
    if not rows:
        return "(no rows)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# -- ours against a published number ---------------------------------------------------------------
#: |z| beyond which a reproduction is flagged as disagreeing with the published number beside it
Z_FLAG = 3.0
#: fewer runs than this: our own standard deviation is too rough an estimate (:func:`paper_check`)
FEW_RUNS = 10

RULE = (f"Rule: a row disagrees with its published number when |z| > {Z_FLAG:g} (two-sided p < 0.0027 under "
        "the normal approximation), z = (ours - published) / sqrt(SE_ours^2 + SE_published^2) where the "
        "publication gives its standard error, and z = (ours - published) / SE_ours (our Monte-Carlo noise "
        "only: the publication's own run-to-run noise unaccounted, so |z| is overstated) where it does not; "
        "a frequency (an error rate, a percentage of instances) is compared with the pooled two-proportion "
        "z where the publication's count of runs is known, else with the binomial SE at the published "
        f"rate over our runs.  With fewer than {FEW_RUNS} runs of ours, our SE is at least the publication's "
        "standard deviation / sqrt(our runs) (our mean's SE if our runs came from the publication's "
        "distribution).")


@dataclasses.dataclass(frozen=True)
class PaperCheck:
    """Our estimate against a published number: the z-score of their difference, whether it is
    beyond :data:`Z_FLAG`, and the known cause of a disagreement (None: none known).

    Built by :func:`paper_check` (means with standard errors) or :func:`paper_check_rate`
    (frequencies); ``flag`` is the sentence an experiment prints, ``cell`` the table entry."""

    label: str
    ours: float
    ours_se: float
    paper: float
    paper_se: float | None
    z: float
    basis: str
    cause: str | None = None
    cause_known: bool = True

    @property
    def compared(self) -> bool:
        return not math.isnan(self.z)

    @property
    def disagrees(self) -> bool:
        return self.compared and abs(self.z) > Z_FLAG

    @property
    def cell(self) -> str:
        """The table entry: "z = 3.6: DISAGREES" / "z = 0.4: agrees" / "not compared"."""
        if not self.compared:
            return "not compared"
        z = "inf" if math.isinf(self.z) else f"{self.z:+.1f}"
        return f"z = {z}: " + ("DISAGREES" if self.disagrees else "agrees")

    @property
    def flag(self) -> str:
        """One sentence naming the row, both numbers, z and its basis, and the known cause (or
        that none is known); "" when the row agrees or was not compared."""
        if not self.disagrees:
            return ""
        paper = f"{self.paper:,.6g}" + (f" (SE {_num(self.paper_se)})" if self.paper_se is not None else "")
        z = "inf" if math.isinf(self.z) else f"{self.z:+.1f}"
        if self.cause and self.cause_known:
            cause = f"Known cause: {self.cause}"
        else:
            cause = "No cause is known" + (f" (none isolated by a measurement); noted: {self.cause}" if self.cause else ".")
        return (f"DISAGREES with the published number: {self.label}: ours {_num(self.ours)} "
                f"(SE {_num(self.ours_se)}) vs published {paper}, z = {z} ({self.basis}). {cause}")

    def row(self) -> dict:
        """The comparison as a table row (for a ``<name>.md`` of comparisons)."""
        return dict(row=self.label, ours=self.ours, ours_se=self.ours_se, published=self.paper,
                    published_se=self.paper_se, z=self.z, basis=self.basis,
                    verdict="DISAGREES" if self.disagrees else ("agrees" if self.compared else "not compared"),
                    known_cause=((self.cause if self.cause_known else None) or "none known") if self.disagrees else "")


def _num(v: float) -> str:
    """A number for a sentence: thousands separated and no decimals from 1,000 on, else 4
    significant digits."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _z(diff: float, se: float) -> float:
    if math.isnan(diff) or math.isnan(se):
        return math.nan
    if se > 0:
        return diff / se
    return 0.0 if diff == 0 else math.copysign(math.inf, diff)


def paper_check(label: str, ours: tuple[float, float], paper: tuple[float, float | None],
                cause: str | None = None, *, n: int | None = None, paper_n: int | None = None,
                cause_known: bool = True) -> PaperCheck:
    """Our mean against a published mean (:data:`RULE`).

    Args:
      label: the row, as the summary names it.
      ours: (mean, standard error) of our replications.
      paper: (published value, its standard error or None when the publication gives none).
      cause: the measured reason for a disagreement, if one is known (printed with the flag).
      n: our number of replications.  Under :data:`FEW_RUNS` the flag says that our SE rests on that
        few, and with ``paper_n`` our SE is raised to at least the published standard deviation
        (``paper_se * sqrt(paper_n)``) / sqrt(n): a standard deviation from 2 or 3 runs can be
        arbitrarily small, and under the hypothesis that our runs follow the publication's
        distribution that is our mean's SE.
      paper_n: the publication's number of runs behind ``paper``'s SE.
      cause_known: False when ``cause`` lists differences that no measurement has isolated as the
        cause (the flag then says that no cause is known, and lists them).

    Returns a :class:`PaperCheck`; z is NaN (not compared) when either mean or our SE is not finite.
    """
    m, se = (float(v) for v in ours)
    pv, pse = float(paper[0]), (None if paper[1] is None or math.isnan(float(paper[1])) else float(paper[1]))
    few = ""
    if n is not None and n < FEW_RUNS:
        few = f"; our SE from {n} runs only"
        if paper_n and pse is not None and n > 0:
            floor = pse * math.sqrt(paper_n) / math.sqrt(n)
            if not math.isfinite(se) or se < floor:
                se = floor
                few += f", raised to the published SD / sqrt({n})"
    if not (math.isfinite(m) and math.isfinite(se) and math.isfinite(pv)):
        return PaperCheck(label, m, se, pv, pse, math.nan, "not compared", cause, cause_known)
    if pse is None:
        return PaperCheck(label, m, se, pv, None, _z(m - pv, se),
                          "our SE only: Monte-Carlo noise, the published number has no SE" + few, cause, cause_known)
    return PaperCheck(label, m, se, pv, pse, _z(m - pv, math.hypot(se, pse)), "both SEs" + few, cause, cause_known)


def paper_check_rate(label: str, ours: tuple[int, int], paper: tuple[float, int | None],
                     cause: str | None = None, *, cause_known: bool = True) -> PaperCheck:
    """Our frequency k / n against a published rate (:data:`RULE`): the pooled two-proportion z when
    the publication's number of runs is known, else the binomial SE at the published rate over our
    n runs (our Monte-Carlo noise only).  Rates are fractions in [0, 1].

    Args:
      label: the row.  ours: (events, runs).  paper: (published rate, its number of runs or None).
      cause: the measured reason for a disagreement, if one is known.
      cause_known: as for :func:`paper_check`.
    """
    k, n = int(ours[0]), int(ours[1])
    p, pn = float(paper[0]), (None if paper[1] is None else int(paper[1]))
    if n < 1 or not math.isfinite(p):
        return PaperCheck(label, math.nan, math.nan, p, None, math.nan, "not compared", cause, cause_known)
    r = k / n
    se_ours = math.sqrt(r * (1 - r) / n)
    if pn is None:
        return PaperCheck(label, r, se_ours, p, None, _z(r - p, math.sqrt(p * (1 - p) / n)),
                          f"binomial SE at the published rate over our {n} runs", cause, cause_known)
    pool = (k + p * pn) / (n + pn)
    return PaperCheck(label, r, se_ours, p, math.sqrt(p * (1 - p) / pn),
                      _z(r - p, math.sqrt(pool * (1 - pool) * (1 / n + 1 / pn))),
                      f"pooled two-proportion z, {n} runs vs the publication's {pn}", cause, cause_known)


def paper_notes(checks: list[PaperCheck], what: str = "published numbers") -> str:
    """The text printed under a summary: every disagreement's flag (with its known cause), or the
    statement that all compared rows agree, then :data:`RULE`."""
    checks = [c for c in checks if c is not None]
    done = [c for c in checks if c.compared]
    bad = [c for c in done if c.disagrees]
    if not done:
        head = f"No row of this run has {what} to compare with."
    elif bad:
        head = (f"{len(bad)} of {len(done)} rows compared with {what} disagree:\n\n"
                + "\n".join(f"* {c.flag}" for c in bad))
    else:
        head = f"All {len(done)} rows compared with {what} agree (|z| <= {Z_FLAG:g})."
    return head + "\n\n" + RULE + "\n"
