"""Standard, versioned benchmark suites: your algorithms beside the library's on the same instances
and the same random keys.

>>> import jaxbandits as jb
>>> rep = jb.benchmark({"mine": MyAlgorithm()}, suite="fixed-confidence", size="quick")
>>> rep.table          # tidy: one row per (algorithm, instance set, grid point, instance, delta)
>>> rep.summary        # one row per (algorithm, instance set, grid point)
>>> rep.report_path    # Markdown report, figures beside it

Suites (:data:`SUITES`; each has a version, bumped whenever its instances, sizes, keys or
baselines change, so that two reports with the same suite version are comparable):

* ``fixed-confidence``: Soare et al.'s benchmark (d = 2..10, omega = 0.1, theta = e_1, sigma = 1/2;
  d = 2 is seed 003 Fig. 1(b)), the many-arms instances of seed 000 Table 1 (K = 1000, the released
  code's generator), random unit-sphere instances at several (d, K) with the noise set so that
  sigma^2 T*(theta) = 1000 (:func:`jaxbandits.instances.seeds.sphere_calibrated`), and the
  transductive example of seed 001 (X != Z; sigma = 1/2); delta = 0.05.
* ``top-m``: the seed 003 instances (classic K = 4, m = 2; hard Top-1; random Gaussian instances of
  Table 4, K = 10, N = 5, m = 4); delta = 0.05.
* ``fixed-budget``: the seed 002 instances (Soare et al.'s instance with sigma^2 = 10, d = 7, B =
  1000; random sphere instances, d = 10, sigma^2 = 10, B = 50 K; the static basis instance).

``size="quick"`` (a CPU: few replications, a subset of the grid and of the baselines) or
``"full"`` (an accelerator: every grid point, hundreds of runs per point, every baseline).

Pairing.  Every algorithm runs with the suite's key and :func:`jaxbandits.sweep`'s ``paired=True``:
replication i of instance j at a grid point uses the same key for every algorithm, and the
instances of a grid point depend only on the suite key and the point.

Baselines are stored on disk (``baselines/`` under the output folder, one folder per baseline and
its :func:`jaxbandits.byo.code_version`) and read back on every later benchmark of the same suite,
version and size: a rerun computes only your algorithms (nothing is compiled for a baseline whose
runs are all on disk).  A change in a baseline's code changes its version and recomputes it.  The
seconds in the report are the engine's (run + compile) for each algorithm's runs as measured when
they were computed (:meth:`jaxbandits.store.Store.measured`), so a rerun that reads everything back
reports the first run's times and says how many replications it read back.

The table.  Per (algorithm, set, point, instance, delta): runs, runs that stopped, the capped
fraction, E[tau] (over all runs; with capped runs counted at their pulls it is a lower bound, and
``capped`` says so) with its SE, the lower bound sigma^2 T*(theta) kl(delta, 1 - delta) (best-arm
identification), E[tau] / lower bound with its SE, the error count and rate with its 95 %
Clopper-Pearson interval (a capped run counts as an error).  Fixed budget: the error rate only.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from jaxbandits.algorithms.base import Algorithm
from jaxbandits.byo import _slug, code_version, configure, library_version, name_of
from jaxbandits.tables import markdown_table
from jaxbandits.sweeps import Generator


@dataclasses.dataclass(frozen=True)
class InstanceSet:
    """One family of instances of a suite.

    Attributes:
      name: the set's name (a column of the table).
      fn: ``fn(key, **params) -> Instance`` (deterministic instances ignore the key).
      grid / quick_grid: parameter name -> values (full size / quick size; cartesian product).
      fixed: parameters passed unchanged.
      n_instances / n_reps: (quick, full) instances per grid point and replications per instance.
      m: the number of items to return (Top-m; the algorithm's ``m`` field is set to it).
      budget: fixed budget, an int or ``budget(params) -> int`` (the algorithm's ``budget`` field).
      max_steps: step cap per run.
      where: ``where(algorithm name, params) -> bool``: leave a baseline out of a grid point (cost).
      description: one line for the report.
    """

    name: str
    fn: Callable
    grid: Mapping[str, Sequence[Any]]
    quick_grid: Mapping[str, Sequence[Any]] | None = None
    fixed: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    n_instances: tuple[int, int] = (1, 1)
    n_reps: tuple[int, int] = (20, 500)
    m: int = 1
    budget: int | Callable[[dict], int] | None = None
    max_steps: int = 1_000_000
    where: Callable[[str, dict], bool] | None = None
    description: str = ""

    def points(self, size: str) -> list[dict]:
        grid = self.quick_grid if size == "quick" and self.quick_grid is not None else self.grid
        return Generator(self.name, self.fn, grid).points()

    def generator(self, params: dict, size: str) -> Generator:
        return Generator(self.name, self.fn, {k: [v] for k, v in params.items()},
                         n_instances=self.n_instances[size == "full"], fixed=dict(self.fixed))

    def budget_at(self, params: dict) -> int | None:
        return self.budget(params) if callable(self.budget) else self.budget


@dataclasses.dataclass(frozen=True)
class Suite:
    """A named, versioned suite: instance sets, deltas, and the library baselines.

    ``baselines``: name -> ``make(delta=..., m=..., budget=...) -> Algorithm`` (keyword arguments;
    a factory uses those it needs); ``quick_baselines``: the names run at the quick size."""

    name: str
    version: str
    kind: str  # "fixed-confidence", "top-m" or "fixed-budget"
    sets: tuple[InstanceSet, ...]
    baselines: Mapping[str, Callable[..., Any]]
    quick_baselines: tuple[str, ...]
    deltas: tuple[float, ...] = (0.05,)
    seed: int = 0
    description: str = ""

    def baseline_names(self, size: str) -> list[str]:
        return list(self.quick_baselines) if size == "quick" else list(self.baselines)


# -- the suites -------------------------------------------------------------------------------------
def _soare(key, d):
    from jaxbandits.instances import seeds

    return seeds.soare_benchmark(d, omega=0.1, theta_scale=1.0, noise=0.5)


def _many_arms(key, num_arms):
    from jaxbandits.instances import seeds

    return seeds.many_arms_code(key, num_arms)


def _sphere(key, dim, num_arms, hardness=1000.0):
    from jaxbandits.instances import seeds

    return seeds.sphere_calibrated(key, num_arms, dim, hardness=hardness)


def _transductive(key, d):
    from jaxbandits.instances import seeds

    return seeds.transductive_example(d, noise=0.5)


def _topm_classic(key, num_arms):
    from jaxbandits.instances import seeds

    return seeds.topm_classic(num_arms, 2)


def _topm_hard(key):
    from jaxbandits.instances import seeds

    return seeds.topm_hard_top1()


def _topm_gaussian(key, num_arms, dim):
    from jaxbandits.instances import seeds

    return seeds.topm_random_gaussian(key, num_arms, dim)


def _fb_adaptive(key, d):
    from jaxbandits.instances import seeds

    return seeds.soare_adaptive_gse(d)


def _fb_sphere(key, num_arms):
    from jaxbandits.instances import seeds

    return seeds.sphere_gse(key, num_arms)


def _fb_static(key, gap):
    from jaxbandits.instances import seeds

    return seeds.static_basis(gap)


def _fc_baselines():
    from jaxbandits.algorithms import (FWS, RAGE, Eliminate, FixedConfidencePeace, LazyTrackAndStop, LinGame, TopTwo,
                                       UniformGLR, XYAdaptive, XYStatic)
    from jaxbandits.algorithms.top_m import gifa
    from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE

    return {
        "LT&S": lambda delta, **_: LazyTrackAndStop(delta=delta),
        "RAGE": lambda delta, **_: RAGE(delta=delta),
        "Peace": lambda delta, **_: FixedConfidencePeace(delta=delta),
        "FWS": lambda delta, **_: FWS(delta=delta),
        "Top Two": lambda delta, **_: TopTwo(delta=delta),
        "LinGame": lambda delta, **_: LinGame(delta=delta),
        "UniformGLR": lambda delta, **_: UniformGLR(delta=delta),
        "LT&S + elimination at sampling": lambda delta, **_: Eliminate(LazyTrackAndStop(delta=delta),
                                                                        at_sampling=True),
        "XY-static": lambda delta, **_: XYStatic(delta=delta),
        "XY-adaptive": lambda delta, **_: XYAdaptive(delta=delta),
        "LinGapE": lambda delta, **_: LinGapE(delta),
    }


def _topm_baselines():
    from jaxbandits.algorithms import LinGame
    from jaxbandits.algorithms.top_m import gifa
    from jaxbandits.calibration import REG

    return {
        "m-LinGapE (greedy)": lambda delta, m, **_: gifa.MLinGapE(m, delta, selection="greedy", reg=REG),
        "LinGIFA": lambda delta, m, **_: gifa.LinGIFA(m, delta, reg=REG),
        "LUCB": lambda delta, m, **_: gifa.LUCB(m, delta),
        "UGapE": lambda delta, m, **_: gifa.UGapE(m, delta),
        "LinGame": lambda delta, m, **_: LinGame(m=m, delta=delta),
    }


def _fb_baselines():
    from jaxbandits.algorithms import GSE, BayesGap, LinUCB, ODLinBAI, Peace

    return {
        "GSE": lambda budget, **_: GSE(budget=budget),
        "OD-LinBAI": lambda budget, **_: ODLinBAI(budget=budget),
        "Peace": lambda budget, **_: Peace(budget=budget),
        "BayesGap": lambda budget, **_: BayesGap(budget=budget),
        "LinUCB": lambda budget, **_: LinUCB(budget=budget),
    }


class _Lazy(Mapping):
    """A mapping built on first use (the baselines import every algorithm module)."""

    def __init__(self, make):
        self._make, self._d = make, None

    def _get(self):
        if self._d is None:
            self._d = self._make()
        return self._d

    def __getitem__(self, k):
        return self._get()[k]

    def __iter__(self):
        return iter(self._get())

    def __len__(self):
        return len(self._get())


def _slow_at_many_arms(name, params):
    """Left out at K >= 1000: baselines whose per-step cost grows as K^2 or K^3, and round robin
    (about 2,400 times the lower bound there: 1.4e5 pulls, the most expensive run of the quick suite)."""
    return not (name in ("LinGapE", "XY-adaptive", "UniformGLR") and int(params.get("num_arms", 0)) >= 1000)


SUITES: dict[str, Suite] = {
    "fixed-confidence": Suite(
        "fixed-confidence", "2", "fixed-confidence",
        sets=(
            InstanceSet("soare", _soare, {"d": list(range(2, 11))}, {"d": [2, 5, 10]}, n_reps=(20, 500),
                        max_steps=2_000_000, where=_slow_at_many_arms,
                        description="Soare et al.'s benchmark: e_1..e_d and (cos 0.1, sin 0.1, 0, ...), theta = e_1, "
                                    "sigma = 1/2 (d = 2: seed 003 Fig. 1(b))"),
            InstanceSet("many-arms", _many_arms, {"num_arms": [1000]}, n_instances=(2, 20), n_reps=(4, 25),
                        max_steps=500_000, where=_slow_at_many_arms,
                        description="seed 000 Table 1 many-arms instances (released code's generator), K = 1000, "
                                    "sigma = 1"),
            InstanceSet("sphere", _sphere, {"dim": [2, 5, 10], "num_arms": [10, 100, 1000]},
                        {"dim": [2, 5], "num_arms": [20]}, n_instances=(4, 50), n_reps=(4, 10),
                        max_steps=1_000_000, where=_slow_at_many_arms,
                        description="arms and theta uniform on the unit sphere, sigma set so that sigma^2 T* = 1000"),
            InstanceSet("transductive", _transductive, {"d": [4, 8, 20, 40]}, {"d": [4]}, n_reps=(20, 500),
                        max_steps=2_000_000, where=_slow_at_many_arms,
                        description="seed 001 transductive example (X = e_1..e_d, Z != X), omega = 0.1, sigma = 1/2"),
        ),
        baselines=_Lazy(_fc_baselines),
        quick_baselines=("LT&S", "RAGE", "FWS", "Top Two", "UniformGLR"),
        description="fixed-confidence best-arm identification (seeds 000, 001, 003)"),
    "top-m": Suite(
        "top-m", "1", "top-m",
        sets=(
            InstanceSet("classic", _topm_classic, {"num_arms": [4]}, m=2, n_reps=(20, 500), max_steps=200_000,
                        description="seed 003 Fig. 1(a): K = 4, m = 2, omega = pi/6, sigma = 1/2"),
            InstanceSet("hard-top1", _topm_hard, {}, m=1, n_reps=(20, 500), max_steps=200_000,
                        description="seed 003 Fig. 1(b): K = 3, m = 1, omega = 0.1, sigma = 1/2"),
            InstanceSet("random-gaussian", _topm_gaussian, {"num_arms": [10], "dim": [5]}, m=4,
                        n_instances=(2, 50), n_reps=(5, 10), max_steps=200_000,
                        description="seed 003 Table 4: K = 10, N = 5, m = 4, spectral normalisation, sigma = 1/2"),
        ),
        baselines=_Lazy(_topm_baselines),
        quick_baselines=("m-LinGapE (greedy)", "LinGame"),
        description="Top-m identification (seed 003)"),
    "fixed-budget": Suite(
        "fixed-budget", "1", "fixed-budget",
        sets=(
            InstanceSet("adaptive", _fb_adaptive, {"d": [7]}, budget=1000, n_reps=(50, 1000), max_steps=2_000,
                        description="seed 002 Sec 8.1: Soare et al.'s instance, omega = 0.1, sigma^2 = 10, d = 7, B = 1000"),
            InstanceSet("sphere", _fb_sphere, {"num_arms": [8, 16, 32, 64]}, {"num_arms": [16]},
                        budget=lambda p: 50 * int(p["num_arms"]), n_instances=(5, 100), n_reps=(10, 10),
                        max_steps=10_000, description="seed 002 Sec 8.3: sphere, d = 10, sigma^2 = 10, B = 50 K"),
            InstanceSet("static", _fb_static, {"gap": [0.1]}, budget=200, n_reps=(50, 1000), max_steps=2_000,
                        description="seed 002 Sec 8.2 static basis instance, d = 16, B = 200"),
        ),
        baselines=_Lazy(_fb_baselines),
        quick_baselines=("GSE", "OD-LinBAI"),
        deltas=(None,),
        description="fixed-budget best-arm identification (seed 002)"),
}


# -- running ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class BenchmarkReport:
    """What :func:`benchmark` returns: ``table`` (tidy, per instance), ``summary`` (per grid point),
    the folder, the Markdown report's path, the figures, the metadata (suite and code versions,
    timings) and the verdict: one line per algorithm of yours (:func:`verdict`)."""

    table: Any
    summary: Any
    out: Path
    report_path: Path
    figures: list[Path]
    metadata: dict
    verdict: list[str] = dataclasses.field(default_factory=list)

    @property
    def markdown(self) -> str:
        return self.report_path.read_text()


def _run_one(name, make, suite, iset, size, folder, key, progress_bar, simulate_kw):
    """Every grid point of one instance set for one algorithm (a sweep per point, paired keys)."""
    import pandas as pd

    from jaxbandits.sweeps import sweep

    frames = []
    for params in iset.points(size):
        if iset.where is not None and not iset.where(name, params):
            progress_bar.update(1)
            continue
        algs = {}
        for delta in suite.deltas:
            algs[delta] = _configure_for(make, suite, iset, params, delta)
        progress_bar.status(f"{name} | {iset.name} " + (", ".join(f"{k}={v}" for k, v in params.items()) or "-"))
        for delta, alg in algs.items():
            df = sweep({name: alg}, iset.generator(params, size), deltas=[None], n_reps=iset.n_reps[size == "full"],
                       key=key, max_steps=iset.max_steps, out=folder, progress=progress_bar.enabled,
                       lower_bound=suite.kind != "fixed-budget", paired=True, **simulate_kw)
            df["delta"] = delta if delta is not None else np.nan
            frames.append(df)
        progress_bar.update(1)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    # what the sweeps read back and the seconds their runs took when computed (sweep's attrs)
    out.attrs.update({k: sum(f.attrs.get(k, 0) for f in frames) for k in _MEASURED})
    return out


#: the counts and seconds of :func:`jaxbandits.sweep`'s attrs that a benchmark adds up
_MEASURED = ("replications_read_back", "replications_computed", "seconds", "seconds_read_back")


def benchmark(algorithms, suite: str | Suite = "fixed-confidence", *, size: str = "quick",
              out: str | Path = "results/benchmark", baselines: bool | Sequence[str] = True,
              baseline_dir: str | Path | None = None, progress: bool | None = None, figures: bool = True,
              **simulate_kw) -> BenchmarkReport:
    """Run ``algorithms`` on a standard suite beside the library's baselines, on paired keys.

    Args:
      algorithms: name -> algorithm (a configured :class:`~jaxbandits.algorithms.base.Algorithm`,
        whose ``delta`` / ``m`` / ``budget`` fields the suite sets per instance set, or a factory
        ``delta -> Algorithm``); one algorithm or a list is named by its class.
      suite: a name in :data:`SUITES` or a :class:`Suite`.
      size: "quick" (CPU) or "full" (accelerator).
      out: output root; the report goes to ``out/<suite>-v<version>-<size>/``.
      baselines: True (the suite's baselines at this size), False, or a list of baseline names.
      baseline_dir: where baselines are stored and read back (default ``out/baselines``).
      progress: a progress bar over (algorithm, instance set, grid point), with the sweep's and the
        run's under it (:mod:`jaxbandits.progress`): None (default) when stderr is a terminal,
        True always, False never.
      figures: write the figures (matplotlib).
      simulate_kw: passed to :func:`jaxbandits.engine.simulate`.

    Returns:
      A :class:`BenchmarkReport`.  Everything is resumable: rerunning the same call reads every
      finished replication back from disk.
    """
    import jax
    import pandas as pd

    from jaxbandits import progress as progress_bar

    s = SUITES[suite] if isinstance(suite, str) else suite
    if size not in ("quick", "full"):
        raise ValueError(f"size must be 'quick' or 'full', got {size!r}")
    if not isinstance(algorithms, Mapping):
        algorithms = list(algorithms) if isinstance(algorithms, (list, tuple)) else [algorithms]
        algorithms = {name_of(a if not isinstance(a, type) else a): a for a in algorithms}
    algorithms = {k: (v() if isinstance(v, type) else v) for k, v in algorithms.items()}
    if baselines is True:
        bnames = s.baseline_names(size)
    elif baselines is False:
        bnames = []
    else:
        bnames = list(baselines)
    clash = set(bnames) & set(algorithms)
    if clash:
        raise ValueError(f"your algorithms' names clash with baselines: {sorted(clash)}")
    tag = f"{s.name}-v{s.version}-{size}"
    root = Path(out) / tag
    bdir = Path(baseline_dir) / tag if baseline_dir is not None else Path(out) / "baselines" / tag
    root.mkdir(parents=True, exist_ok=True)
    key = jax.random.key(s.seed)

    def _probe(make):
        iset = s.sets[0]
        return _configure_for(make, s, iset, iset.points(size)[0], s.deltas[0])

    entries = []  # (name, make, kind, version, folder)
    for name, make in algorithms.items():
        v = code_version(_probe(make))
        entries.append((name, make, "yours", v, root / "runs" / f"{_slug(name)}_{v}"))
    for name in bnames:
        make = _baseline_factory(s, name)
        v = code_version(_probe(make))
        entries.append((name, make, "baseline", v, bdir / f"{_slug(name)}_{v}"))
    n_tasks = len(entries) * sum(len(iset.points(size)) for iset in s.sets)
    bar = progress_bar.Bar(n_tasks, desc=f"benchmark {tag}", unit="point", enabled=progress_bar.wanted(progress))
    t0 = time.time()
    frames, timings = [], {}
    totals = dict.fromkeys(_MEASURED, 0)
    try:
        for name, make, kind, v, folder in entries:
            timings[name] = 0.0
            for iset in s.sets:
                df = _run_one(name, make, s, iset, size, folder / iset.name, key, bar, simulate_kw)
                timings[name] += df.attrs.get("seconds", 0.0)
                for k in _MEASURED:
                    totals[k] += df.attrs.get(k, 0)
                if len(df):
                    df.insert(1, "set", iset.name)
                    df.insert(2, "kind", kind)
                    df["code_version"] = v
                    df["point"] = [json.dumps({k: _py(r[k]) for k in iset.points(size)[0]}, sort_keys=True)
                                   for _, r in df.iterrows()] if iset.points(size)[0] else "{}"
                    frames.append(df)
        bar.status("")  # the bar that stays says only what was done
    finally:
        bar.close()
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table = tidy_table(rows, s)
    summ = summary_table(rows, s)
    table.to_csv(root / "table.csv", index=False)
    summ.to_csv(root / "summary.csv", index=False)
    meta = dict(suite=s.name, suite_version=s.version, size=size, seed=s.seed, deltas=list(s.deltas),
                jaxbandits=library_version(), jax=jax.__version__, backend=jax.default_backend(),
                devices=[str(d) for d in jax.devices()],
                algorithms={n: dict(kind=k, code_version=v, folder=str(f)) for n, _, k, v, f in entries},
                seconds=timings, wall_time=time.time() - t0,
                **{("compute_seconds" if k == "seconds" else k): v for k, v in totals.items()},
                sets={i.name: dict(description=i.description, points=i.points(size),
                                   n_instances=i.n_instances[size == "full"], n_reps=i.n_reps[size == "full"],
                                   m=i.m, max_steps=i.max_steps) for i in s.sets})
    meta["verdict"] = verdict(table, s)
    (root / "metadata.json").write_text(json.dumps(meta, indent=2, default=str))
    figs = write_figures(rows, summ, s, root) if figures and len(rows) else []
    report = root / "report.md"
    report.write_text(report_markdown(summ, s, meta, figs, root))
    return BenchmarkReport(table, summ, root, report, figs, meta, meta["verdict"])


def _baseline_factory(s: Suite, name: str):
    return _BaselineFactory(s.baselines[name])


@dataclasses.dataclass(frozen=True)
class _BaselineFactory:
    """A suite baseline: ``make(delta=..., m=..., budget=...)``."""

    make: Callable


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _configure_for(alg, suite: Suite, iset: InstanceSet, params: dict, delta):
    """The algorithm configured for an instance set: baselines through their factory's keywords;
    yours through fields (``delta`` and ``m``; fixed budget: ``budget``) or, for a factory, by
    calling it with delta (fixed budget: with the budget)."""
    budget = iset.budget_at(params)
    if isinstance(alg, _BaselineFactory):
        return alg.make(delta=delta, m=iset.m, budget=budget)
    if suite.kind == "fixed-budget":
        if callable(alg) and not isinstance(alg, Algorithm):
            return alg(budget)
        return configure(alg, None, budget=budget)
    out = configure(alg, delta, m=iset.m)
    if out.top_m != iset.m:
        raise ValueError(f"{type(out).__name__} returns {out.top_m} item(s) but the set {iset.name!r} asks for "
                         f"m = {iset.m} (give the algorithm an m field)")
    return out


# -- tables ------------------------------------------------------------------------------------------
def _per_run(rows):
    rows = rows.copy()
    stopped = rows["stopped"].astype(bool)
    rows["error"] = ~(rows["correct"].astype(bool) & stopped)
    rows["ratio"] = rows["samples"] / rows["lower_bound"]
    return rows


def _aggregate(rows, by):
    import pandas as pd

    from jaxbandits.stats import clopper_pearson

    out = []
    for keys, g in _per_run(rows).groupby(by, sort=False, dropna=False):
        n = len(g)
        k = int(g["error"].sum())
        lo, hi = clopper_pearson(k, n)
        st = g["stopped"].astype(bool)
        mean, se = float(g["samples"].mean()), float(g["samples"].std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        lb = g["lower_bound"].to_numpy(float)
        r = g["ratio"].to_numpy(float)
        ok = np.isfinite(r)
        out.append(dict(zip(by, keys if isinstance(keys, tuple) else (keys,)), runs=n, stopped=int(st.sum()),
                        frac_capped=1.0 - st.mean(), mean=mean, se=se,
                        lower_bound=float(np.nanmean(lb)) if np.isfinite(lb).any() else math.nan,
                        ratio=float(r[ok].mean()) if ok.any() else math.nan,
                        ratio_se=float(r[ok].std(ddof=1) / math.sqrt(ok.sum())) if ok.sum() > 1 else math.nan,
                        errors=k, error_rate=k / n if n else math.nan, error_lo=lo, error_hi=hi,
                        mean_is_lower_bound=bool((~st).any())))
    return pd.DataFrame(out)


def tidy_table(rows, s: Suite):
    """One row per (algorithm, set, point, instance, delta) (module docstring)."""
    if not len(rows):
        return rows
    return _aggregate(rows, ["algorithm", "kind", "set", "point", "instance", "delta"])


def summary_table(rows, s: Suite):
    """One row per (algorithm, set, point, delta): runs pooled over the instances of the point; the
    ratio is the mean over runs of tau / (the lower bound of the run's instance)."""
    if not len(rows):
        return rows
    return _aggregate(rows, ["algorithm", "kind", "set", "point", "delta"])


# -- verdict ---------------------------------------------------------------------------------------
#: family-wise level of the verdict's delta-correctness tests (Bonferroni over an algorithm's instances)
VERDICT_LEVEL = 0.05


def _ratio_text(x: float) -> str:
    return f"{x:.3g}x"


def verdict(table, s: Suite, level: float = VERDICT_LEVEL) -> list[str]:
    """One line per algorithm of yours in ``table`` (:func:`tidy_table`, one row per instance):

    * fixed confidence and Top-m: whether it is delta-correct on every instance (exact one-sided
      binomial test of "error rate <= delta" per instance, :func:`jaxbandits.stats.binomial_test_upper`,
      at the family-wise ``level`` by Bonferroni over its instances; capped runs count as errors)
      with its errors, runs and the worst instance when one fails; and its E[tau] against the best
      baseline of each instance (the one with the smallest E[tau] there): the median ratio over
      instances with its range, the instances where it is the fastest, and those where it is
      faster or slower than that baseline by more than 2 SE (the SEs of the two means combined),
      with the baseline that is best most often;
    * fixed budget: its error rate against the best baseline's (the lowest of each instance): the
      instances where it errs least (ties included), and where its error rate is outside the best
      baseline's 95 % Clopper-Pearson interval.
    """
    from jaxbandits.stats import binomial_test_upper

    if not len(table):
        return []
    keys = ["set", "point", "instance", "delta"]
    base = table[table["kind"] == "baseline"]
    lines = []
    for alg in dict.fromkeys(table.loc[table["kind"] == "yours", "algorithm"]):
        mine = table[table["algorithm"] == alg]
        n = len(mine)
        runs, errs = int(mine["runs"].sum()), int(mine["errors"].sum())
        parts = []
        # best baseline per instance (smallest E[tau]; fixed budget: smallest error rate)
        col = "error_rate" if s.kind == "fixed-budget" else "mean"
        if len(base):
            best = base.loc[base.groupby(keys, dropna=False)[col].idxmin()]
            both = mine.merge(best, on=keys, suffixes=("", "_b"))
        else:
            both = mine.iloc[:0]
        m = len(both)
        if s.kind == "fixed-budget":
            text = f"error rate {errs / runs:.3g} ({errs}/{runs} runs on {n} instance(s))"
            if m:
                lowest = int((both["error_rate"] <= both["error_rate_b"]).sum())
                above = int((both["error_rate"] > both["error_hi_b"]).sum())
                below = int((both["error_rate"] < both["error_lo_b"]).sum())
                pooled_b = int(both["errors_b"].sum()) / int(both["runs_b"].sum())
                text += (f" against {pooled_b:.3g} for the best baseline of each instance (pooled); lowest or tied "
                         f"on {lowest}/{m}, above the best baseline's 95 % Clopper-Pearson interval on {above}/{m}, "
                         f"below it on {below}/{m}")
            parts.append(text)
        else:
            p = np.array([binomial_test_upper(int(k), int(r), float(d)) for k, r, d in
                          zip(mine["errors"], mine["runs"], mine["delta"])])
            bad = p < level / n
            capped = int(np.round(mine["frac_capped"] * mine["runs"]).sum())
            tested = f"exact binomial test of error <= delta per instance, Bonferroni level {level:g}"
            extra = f", {capped} capped counted as errors" if capped else ""
            if not bad.any():
                parts.append(f"delta-correct on {n}/{n} instances ({errs} errors in {runs} runs{extra}; {tested})")
            else:
                w = mine.iloc[int(np.argmin(p))]
                parts.append(f"NOT delta-correct on {int(bad.sum())}/{n} instances (worst {w['set']} "
                             f"{_point_label(w['point'])} instance {w['instance']}: {w['errors']}/{w['runs']} errors at "
                             f"delta = {w['delta']:g}, p = {p.min():.2g}; {errs} errors in {runs} runs{extra}; {tested})")
            if m:
                r = both["mean"].to_numpy(float) / both["mean_b"].to_numpy(float)
                diff = both["mean"].to_numpy(float) - both["mean_b"].to_numpy(float)
                sd = np.sqrt(np.nan_to_num(both["se"].to_numpy(float)) ** 2
                             + np.nan_to_num(both["se_b"].to_numpy(float)) ** 2)
                fastest = int((diff < 0).sum())
                faster, slower = int((diff < -2 * sd).sum()), int((diff > 2 * sd).sum())
                top = both["algorithm_b"].value_counts()
                capped_cells = int((both["mean_is_lower_bound"] | both["mean_is_lower_bound_b"]).sum())
                parts.append(f"E[tau] {_ratio_text(float(np.median(r)))} the best baseline's (median over {m} "
                             f"instances, {_ratio_text(float(r.min()))} to {_ratio_text(float(r.max()))}); fastest on "
                             f"{fastest}/{m}, faster by > 2 SE on {faster}/{m}, slower by > 2 SE on {slower}/{m}; "
                             f"best baseline most often {top.index[0]} ({int(top.iloc[0])}/{m})"
                             + (f"; capped runs on {capped_cells} instance(s), whose means are lower bounds"
                                if capped_cells else ""))
        if not m:
            parts.append("no baseline ran on its instances")
        lines.append(f"{alg}: " + "; ".join(parts) + ".")
    return lines


# -- report ------------------------------------------------------------------------------------------
def _point_label(p: str) -> str:
    d = json.loads(p)
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def _cell(r, what):
    if what == "ratio":
        if not math.isfinite(r["ratio"]):
            return "-"
        return f"{r['ratio']:.3g} ± {r['ratio_se']:.2g}" + (" (capped)" if r["mean_is_lower_bound"] else "")
    if what == "mean":
        return f"{r['mean']:.4g} ± {r['se']:.2g}" + (" (capped)" if r["mean_is_lower_bound"] else "")
    return f"{r['errors']}/{r['runs']} [{r['error_lo']:.3f}, {r['error_hi']:.3f}]"


def _timing_sentence(meta: dict) -> str:
    """The report's wall time, and what it read back from earlier runs with their seconds then."""
    back, done = meta.get("replications_read_back", 0), meta.get("replications_computed", 0)
    if not back:
        return f"Wall time {meta['wall_time']:.0f} s."
    return (f"Wall time {meta['wall_time']:.0f} s for this run, which read back {back} of {back + done} "
            f"replications from earlier runs (stored under the same suite, code versions and keys); "
            f"every algorithm's seconds below are those measured when its runs were computed "
            f"({meta.get('compute_seconds', 0):.0f} s in all).")


def report_markdown(summ, s: Suite, meta: dict, figs: list[Path], root: Path) -> str:
    lines = [f"# Benchmark: suite {s.name} v{s.version} ({meta['size']})", "",
             f"{s.description}.  jaxbandits {meta['jaxbandits']}, JAX {meta['jax']} on {meta['backend']}; "
             f"seed {meta['seed']}, paired keys (every algorithm sees the same instances and the same "
             f"replication keys).  {_timing_sentence(meta)}", "",
             *(text for line in meta.get("verdict", []) for text in (f"**Verdict.** {line}", "")),
             "| algorithm | kind | code version | seconds |", "|---|---|---|---|"]
    for n, a in meta["algorithms"].items():
        lines.append(f"| {n} | {a['kind']} | {a['code_version']} | {meta['seconds'].get(n, 0):.0f} |")
    lines.append("")
    metrics = ([("error", "errors / runs [95 % Clopper-Pearson]")] if s.kind == "fixed-budget" else
               [("ratio", "E[tau] / lower bound ± SE" if s.kind == "fixed-confidence" else None),
                ("mean", "E[tau] ± SE"), ("error", "errors / runs [95 % Clopper-Pearson]; capped runs count as errors")])
    for iset in s.sets:
        sub = summ[summ["set"] == iset.name]
        if not len(sub):
            continue
        info = meta["sets"][iset.name]
        lines += [f"## {iset.name}", "", f"{iset.description}.  {info['n_instances']} instance(s) per point x "
                  f"{info['n_reps']} runs; cap {info['max_steps']} steps.", ""]
        points = list(dict.fromkeys(sub["point"]))
        for what, title in metrics:
            if title is None:
                continue
            if what == "ratio" and not np.isfinite(sub["ratio"].to_numpy(float)).any():
                continue
            lines += [f"**{title}**", ""]
            recs = []
            for (alg, kind), g in sub.groupby(["algorithm", "kind"], sort=False):
                rec = {"algorithm": f"**{alg}**" if kind == "yours" else alg}
                for p in points:
                    r = g[g["point"] == p]
                    rec[_point_label(p)] = _cell(r.iloc[0], what) if len(r) else "not run"
                recs.append(rec)
            lines += [markdown_table(recs), ""]
    if figs:
        lines += ["## Figures", ""] + [f"![{f.stem}]({f.relative_to(root)})" for f in figs] + [""]
    lines += ["Tables: `table.csv` (per instance), `summary.csv` (per grid point); metadata: `metadata.json`.", ""]
    return "\n".join(lines)


def _grid_ticks(points: list[str]) -> tuple[str, list[str]]:
    """The x label and tick labels of a set's grid points: the parameter's name and its values
    (several parameters: their names in brackets, e.g. ``(dim, num_arms)``, and the values so)."""
    params = [json.loads(p) for p in points]
    keys = list(dict.fromkeys(k for d in params for k in d))
    if not keys:
        return "grid point", ["one fixed instance"] * len(points)
    if len(keys) == 1:
        return keys[0], [str(d.get(keys[0], "-")) for d in params]
    return f"({', '.join(keys)})", [f"({', '.join(str(d.get(k, '-')) for k in keys)})" for d in params]


def write_figures(rows, summ, s: Suite, root: Path) -> list[Path]:
    """One figure per instance set: E[tau] / lower bound (fixed confidence, best-arm), E[tau]
    (Top-m) or the error rate (fixed budget) at each grid point, one series per algorithm (yours
    solid and thick, the baselines thin and dashed, each with its own marker, dodged sideways at a
    grid point so that equal results stay visible), the legend beside the axes; and the
    distribution of per-instance ratios per algorithm (:mod:`jaxbandits.plotting` style)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from jaxbandits.plotting import dodge, grid_axis, legend_outside, new_figure, plain_log_ticks, series_styles

    figdir = root / "figures"
    figdir.mkdir(exist_ok=True)
    paths = []
    for iset in s.sets:
        sub = summ[summ["set"] == iset.name]
        if not len(sub):
            continue
        points = list(dict.fromkeys(sub["point"]))
        xlabel, ticks = _grid_ticks(points)
        fig, axes = new_figure(panel=(max(4.0, 0.75 * len(points) + 2.5), 3.6), extra=(2.4, 0.0))
        ax = axes[0, 0]
        if s.kind == "fixed-budget":
            ycol, ylab, logy, bars = "error_rate", "error rate", False, "95 % Clopper-Pearson"
        elif s.kind == "fixed-confidence":
            ycol, ylab, logy, bars = "ratio", "E[tau] / lower bound", True, "$\\pm$ 2 SE"
        else:
            ycol, ylab, logy, bars = "mean", "E[tau] (pulls)", True, "$\\pm$ 2 SE"
        groups = list(sub.groupby(["algorithm", "kind"], sort=False))
        style = series_styles(alg for (alg, _), _ in groups)
        for n_alg, ((alg, kind), g) in enumerate(groups):
            idx = np.array([points.index(p) for p in g["point"]], float)
            y = g[ycol].to_numpy(float)
            if ycol == "error_rate":
                err = [y - g["error_lo"].to_numpy(float), g["error_hi"].to_numpy(float) - y]
            else:
                err = 2 * g["ratio_se" if ycol == "ratio" else "se"].to_numpy(float)
            mine = kind == "yours"
            ax.errorbar(dodge(idx, n_alg, len(groups), grid=range(len(points))), y, yerr=err, ms=7 if mine else 5,
                        lw=2.5 if mine else 1.0, ls="-" if mine else "--", capsize=3,
                        label=alg + (" (yours)" if mine else ""), zorder=3 if mine else 2, **style[alg])
        grid_axis(ax, range(len(points)), labels=ticks)
        if logy:
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        if s.kind == "fixed-confidence":
            ax.axhline(1.0, c="grey", lw=0.8, ls=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylab)
        ax.set_title(f"{s.name} v{s.version}: {iset.name}")
        legend_outside(fig, title=f"error bars: {bars}")
        p = figdir / f"{iset.name}.png"
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)
    if s.kind == "fixed-confidence":
        r = _per_run(rows)
        per_inst = r.groupby(["algorithm", "kind", "set", "point", "instance"], sort=False)["ratio"].mean().reset_index()
        names = list(dict.fromkeys(per_inst["algorithm"]))
        yours = set(per_inst.loc[per_inst["kind"] == "yours", "algorithm"])
        labels = [a + (" (yours)" if a in yours else "") for a in names]
        data = [per_inst.loc[per_inst["algorithm"] == a, "ratio"].dropna().to_numpy() for a in names]
        if any(len(d) for d in data):
            fig, axes = new_figure(panel=(6.0, 0.32 * len(labels) + 1.2))
            ax = axes[0, 0]
            have = [i for i, d in enumerate(data) if len(d)]
            ax.boxplot([data[i] for i in have], positions=[i + 1 for i in have], orientation="horizontal",
                       widths=0.6, manage_ticks=False)
            ax.set_yticks(range(1, len(labels) + 1), labels)
            ax.set_ylim(len(labels) + 0.5, 0.5)  # yours on top
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
            ax.axvline(1.0, c="grey", lw=0.8, ls=":")
            ax.set_xlabel("E[tau] / lower bound, per instance\n(every set; dotted line: 1)")
            ax.set_ylabel("algorithm")
            p = figdir / "ratio_distribution.png"
            fig.savefig(p, dpi=110, bbox_inches="tight")
            plt.close(fig)
            paths.append(p)
    return paths


# float64 inside the public functions, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), ["benchmark"])


# -- K-armed suites ----------------------------------------------------------------------------------
def _karmed_random(key, num_arms, model="gaussian"):
    from jaxbandits.instances.karmed import random_k_armed

    return random_k_armed(key, num_arms, model=model)


def _karmed_gk16(key, scenario):
    from jaxbandits.instances.karmed import garivier_kaufmann_2016

    return garivier_kaufmann_2016(scenario)


def _karmed_fc_baselines(linear: bool = True):
    from jaxbandits.algorithms import (KArmedEBTCEpsilon, KArmedKLLUCB, KArmedLilUCB, KArmedLUCB1, KArmedTopTwo,
                                       KArmedTrackAndStop, SuccessiveElimination, UniformGLR)

    out = {
        "Track-and-Stop (D)": lambda delta, **_: KArmedTrackAndStop(delta=delta),
        "Track-and-Stop (C)": lambda delta, **_: KArmedTrackAndStop(delta=delta, tracking="C"),
        "EB-TC": lambda delta, **_: KArmedTopTwo(delta=delta),
        "EB-TCI": lambda delta, **_: KArmedTopTwo(delta=delta, challenger="TCI"),
        "EB-TC (IDS)": lambda delta, **_: KArmedTopTwo(delta=delta, selection="ids"),
        "T3C": lambda delta, **_: KArmedTopTwo(delta=delta, leader="TS"),
        "TTTS": lambda delta, **_: KArmedTopTwo(delta=delta, leader="TS", challenger="TS"),
        "KL-LUCB": lambda delta, **_: KArmedKLLUCB(delta=delta),
        "LUCB1": lambda delta, **_: KArmedLUCB1(delta=delta),
        "lil'UCB": lambda delta, **_: KArmedLilUCB(delta=delta),
        "Successive Elimination": lambda delta, **_: SuccessiveElimination(delta=delta),
    }
    if linear:  # Gaussian arms only: the Gaussian linear GLR, and EB-TCε (epsilon = 0.1, the paper's
        # experiments; an epsilon-good answer counts as correct, the table's lower bound is best-arm T*)
        out["UniformGLR"] = lambda delta, **_: UniformGLR(delta=delta)
        out["EB-TC-epsilon (IDS)"] = lambda delta, **_: KArmedEBTCEpsilon(delta=delta)
    return out


def _karmed_fb_baselines():
    from jaxbandits.algorithms import SequentialHalving, SuccessiveRejects

    return {"Successive Rejects": lambda budget, **_: SuccessiveRejects(budget=budget),
            "Sequential Halving": lambda budget, **_: SequentialHalving(budget=budget)}


#: K-armed bandits (:mod:`jaxbandits.instances.karmed`).  Fixed confidence on Gaussian arms: the
#: lower bound sigma^2 T*(theta) of the Gaussian linear model, which is the K-armed Gaussian T*(mu)
#: (:func:`jaxbandits.design.karmed.characteristic_time`); on Bernoulli arms (``k-armed-bernoulli``)
#: the sweep's lower bound is the Bernoulli T*(mu) kl(delta, 1 - delta) of Garivier & Kaufmann 2016.
SUITES["k-armed"] = Suite(
    "k-armed", "2", "fixed-confidence",
    sets=(InstanceSet("gaussian-random", _karmed_random, {"num_arms": [5, 10, 20, 50]}, {"num_arms": [5]},
                      n_instances=(2, 20), n_reps=(10, 200), max_steps=1_000_000,
                      description="K-armed Gaussian arms, sigma = 1/2: best mean 0.9, the others uniform in "
                                  "[0.1, 0.7]"),),
    baselines=_Lazy(_karmed_fc_baselines),
    quick_baselines=("Track-and-Stop (D)", "EB-TC"),
    deltas=(0.1,),
    description="fixed-confidence best-arm identification on K-armed Gaussian bandits")
SUITES["k-armed-bernoulli"] = Suite(
    "k-armed-bernoulli", "1", "fixed-confidence",
    sets=(InstanceSet("gk16", _karmed_gk16, {"scenario": [1, 2]}, {"scenario": [2]}, n_reps=(20, 1000),
                      max_steps=1_000_000,
                      description="Garivier & Kaufmann 2016's Bernoulli scenarios mu1 and mu2 (their Table 1)"),
          InstanceSet("bernoulli-random", _karmed_random, {"num_arms": [5, 10, 20]}, {"num_arms": [5]},
                      fixed={"model": "bernoulli"}, n_instances=(2, 20), n_reps=(10, 200), max_steps=1_000_000,
                      description="K-armed Bernoulli arms: best mean 0.9, the others uniform in [0.1, 0.7]")),
    baselines=_Lazy(lambda: _karmed_fc_baselines(linear=False)),
    quick_baselines=("Track-and-Stop (D)", "EB-TC"),
    deltas=(0.1,),
    description="fixed-confidence best-arm identification on K-armed Bernoulli bandits")
SUITES["k-armed-budget"] = Suite(
    "k-armed-budget", "1", "fixed-budget",
    sets=(InstanceSet("gk16", _karmed_gk16, {"scenario": [1, 2]}, budget=lambda p: 3000 if p["scenario"] == 1 else 1000,
                      n_reps=(50, 2000), max_steps=100,
                      description="Garivier & Kaufmann 2016's Bernoulli scenarios mu1 (B = 3000) and mu2 (B = 1000)"),
          InstanceSet("bernoulli-random", _karmed_random, {"num_arms": [8, 16, 32]}, {"num_arms": [8]},
                      fixed={"model": "bernoulli"}, budget=lambda p: 100 * int(p["num_arms"]), n_instances=(2, 20),
                      n_reps=(20, 200), max_steps=100,
                      description="K-armed Bernoulli arms: best mean 0.9, the others uniform in [0.1, 0.7], B = 100 K")),
    baselines=_Lazy(_karmed_fb_baselines),
    quick_baselines=("Successive Rejects", "Sequential Halving"),
    deltas=(None,),
    description="fixed-budget best-arm identification on K-armed Bernoulli bandits")
