"""Sweeps as a first-class job: algorithms x instance distributions (with their parameters) x delta
x replications, run on the engine, returned as a tidy :class:`pandas.DataFrame`.

>>> df = sweep({"RAGE": RAGE(), "LT&S": LazyTrackAndStop()},
...            Generator("sphere", seeds.unit_sphere, {"dim": [2, 5], "num_arms": [10, 100]}, n_instances=20),
...            deltas=[0.05, 0.01], n_reps=10, out="results/my_sweep")
>>> summary(df, ["algorithm", "dim", "num_arms", "delta"])

One row per replication: the algorithm, the generator, every parameter of the grid, delta, the
instance and replication indices, the stopping time (``samples``), steps, correctness, whether the
run stopped before the cap, the returned item(s), the instance's noise scale, and the lower bound
sigma^2 T*(theta) kl(delta, 1 - delta) of seed 000 Thm 1 (for best-arm identification).

Reproducibility: the instances of a grid point depend only on (key, generator name, parameters),
so every algorithm and every delta sees the same instances (paired comparisons); the replications
of a configuration depend only on (key, configuration label, instance, replication).  With ``out``
every finished chunk is appended to ``out/rows.csv`` (:mod:`jaxbandits.store`, the experiments'
store), and a rerun reads back what is there for the same key and the same code version of the
algorithm and runs only what is missing (an interrupted sweep loses at most the chunk in flight;
a change of the code an algorithm depends on reruns its configurations); T*(theta) of
each instance is kept in ``out/instances.csv``, its noise scale and shapes in
``out/instance_meta.csv``, so that a grid point whose configurations are all finished is not
drawn again.

Shape buckets: by default (``buckets=Buckets()``) every algorithm that declares
``supports_padding`` runs on its instances padded to the bucket of their (K, M) (powers of two from
8: :class:`jaxbandits.instances.base.Buckets`), and T* is computed on the padded instances too, so a
sweep over K compiles one program per bucket, not per K.  The table reports the real ``K`` and
``M`` and, in ``K_bucket`` / ``M_bucket``, the shapes the program ran at.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import jax
import numpy as np

from jaxbandits.algorithms.base import Algorithm
from jaxbandits.instances.base import Buckets, Instance, pad_to
from jaxbandits.store import Store, key_for, run_label

ROW_FIELDS = ("algorithm", "generator", "params", "delta", "instance", "rep", "samples", "steps", "correct",
              "stopped", "answer")


@dataclasses.dataclass(frozen=True)
class Generator:
    """An instance distribution and its parameter grid.

    Attributes:
      name: the generator's name in the table.
      fn: ``fn(key, **params) -> Instance`` (one instance), e.g. ``seeds.unit_sphere``.
      grid: parameter name -> the values to sweep (the cartesian product is taken); each becomes a
        column of the table.
      n_instances: instances drawn per grid point (instance j from ``fold_in(key, j)``).
      fixed: parameters passed unchanged and not swept (not columns).
    """

    name: str
    fn: Callable[..., Instance]
    grid: Mapping[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    n_instances: int = 1
    fixed: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        from jaxbandits import validation

        validation.check_generator(self)

    def points(self) -> list[dict]:
        names = list(self.grid)
        return [dict(zip(names, vals)) for vals in itertools.product(*(self.grid[n] for n in names))]

    def draw(self, key: jax.Array, params: dict) -> Instance:
        from jaxbandits.instances import seeds

        return seeds.batch(self.fn, key, self.n_instances, **self.fixed, **params)


class _PointInfo(NamedTuple):
    """What the table needs of a grid point's instances: noise scales [n_instances] and shapes."""

    noise: np.ndarray
    K: int
    d: int
    M: int


def _configure(alg, delta):
    """The algorithm at ``delta``: a factory is called with it; a configured algorithm gets its
    ``delta`` field replaced (None: used as it is)."""
    if callable(alg) and not isinstance(alg, Algorithm):
        return alg(delta)
    if delta is None:
        return alg
    if not any(f.name == "delta" for f in dataclasses.fields(alg)):
        raise ValueError(f"{type(alg).__name__} has no delta field; give a factory delta -> algorithm")
    return dataclasses.replace(alg, delta=delta)


def _characteristic_times(instances: Instance) -> np.ndarray:
    from jaxbandits.design import characteristic_time

    return np.asarray(jax.device_get(characteristic_time(instances)), float)


def _kl(delta: float) -> float:
    from jaxbandits.stats import kl_bernoulli

    return kl_bernoulli(delta, 1.0 - delta)


def sweep(
    algorithms: Mapping[str, Algorithm | Callable[[float], Algorithm]],
    generators: Generator | Sequence[Generator],
    *,
    deltas: Sequence[float | None] = (None,),
    n_reps: int = 100,
    key: jax.Array | int = 0,
    max_steps: int | Callable[[Algorithm, Instance], int] = 10**6,
    out: str | Path | None = None,
    progress: bool | None = None,
    lower_bound: bool = True,
    buckets: Buckets | None = Buckets(),
    paired: bool = False,
    where: Callable[[str, dict], bool] | None = None,
    resume_only: bool = False,
    **simulate_kw,
):
    """Run every algorithm on every grid point of every generator at every delta.

    Args:
      algorithms: name -> a configured algorithm (its ``delta`` is replaced by each value of
        ``deltas``) or a factory ``delta -> algorithm``.
      generators: one :class:`Generator` or several.
      deltas: confidence levels (``(None,)``: each algorithm as configured).
      n_reps: replications per instance.
      key: PRNG key (or an int seed).
      max_steps: step cap per replication, or ``f(algorithm, instances) -> cap``.  Capped runs stay
        in the table with ``stopped = False`` (use :func:`summary`, which counts them).
      out: folder for ``rows.csv`` / ``instances.csv`` (append as it goes, resume on rerun).
      progress: a progress bar over configurations (tqdm): None (default) when stderr is a
        terminal, True always, False never.
      lower_bound: compute T*(theta) per instance (best-arm identification; top-m rows get NaN).
      buckets: shape-bucket policy (default powers of two from 8); None runs every configuration
        at its own (K, M), one program per shape.
      paired: derive the replication keys from (grid point, delta) only, not from the algorithm's
        name: every algorithm then runs on the same keys (common random numbers), so differences
        between algorithms are paired (e.g. a wrapper that only adds a stopping rule, such as
        ``Eliminate(base)``, sees exactly the base's observations).
      where: ``where(name, params) -> bool``: run algorithm ``name`` at the grid point ``params``
        only where it returns True (e.g. an algorithm whose per-pull cost grows as K^3 left out at
        large K); the left-out configurations have no rows.
      resume_only: run nothing: return the configurations complete on disk (``out``), leave out
        the others (with a warning naming them), and draw no instances where ``instance_meta.csv``
        has them (tables and figures from an interrupted sweep).
      simulate_kw: passed to :func:`jaxbandits.engine.simulate` (lanes, chunk_size, devices, ...).

    Returns:
      A :class:`pandas.DataFrame` with one row per replication (see the module docstring).
    """
    import pandas as pd

    from jaxbandits import progress as progress_bar, validation
    from jaxbandits.engine import simulate

    # -- input checks (jaxbandits.validation): before anything is drawn or compiled --------------
    validation.check_sweep(algorithms, generators, deltas=deltas, n_reps=n_reps, max_steps=max_steps, out=out,
                           progress=progress, generator_type=Generator, where=where, flags=dict(
                               lower_bound=lower_bound, paired=paired, resume_only=resume_only))
    gens = [generators] if isinstance(generators, Generator) else list(generators)
    base = validation.as_key(key)
    out = Path(out) if out is not None else None
    inst_path = meta_path = None
    store = Store()  # in memory only, unless ``out`` is given
    tstar_cache: dict[tuple[str, int], float] = {}
    meta_cache: dict[tuple[str, int], dict] = {}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        store = Store(out / "rows.csv")
        inst_path, meta_path = out / "instances.csv", out / "instance_meta.csv"
        if inst_path.exists():
            for r in pd.read_csv(inst_path).to_dict("records"):
                tstar_cache[(r["point"], int(r["instance"]))] = float(r["T_star"])
        if meta_path.exists():
            for r in pd.read_csv(meta_path).to_dict("records"):
                meta_cache[(r["point"], int(r["instance"]))] = r

    def point_of(g, params):
        return json.dumps(dict(generator=g.name, **params), sort_keys=True, default=str)

    def config_of(name, point, delta):  # paired runs are other replications: resumed apart
        return dict(algorithm=name, point=point, delta=delta, **({"paired": True} if paired else {}))

    configured: dict[tuple[str, Any], Algorithm] = {}

    def algorithm_at(name, delta):
        if (name, delta) not in configured:
            configured[name, delta] = _configure(algorithms[name], delta)
        return configured[name, delta]

    # the seed in the stored labels: the int, or the key's data
    seed = key if isinstance(key, int) else [int(v) for v in np.asarray(jax.random.key_data(base)).ravel()]

    def label_of(name, point, delta):
        return run_label(config_of(name, point, delta), algorithm_at(name, delta), seed)

    configs = [(g, p, name, d) for g in gens for p in g.points() for name in algorithms for d in deltas
               if where is None or where(name, p)]
    # grid points where some configuration still has replications to run: only there are the
    # instances drawn again on a rerun (a draw can cost minutes: seeds.sphere_calibrated solves
    # T* per instance); elsewhere the noise scales and shapes are read from instance_meta.csv
    missing = [not store.complete(label_of(name, point_of(g, params), delta), g.n_instances, n_reps)
               for g, params, name, delta in configs]
    if resume_only:
        if out is None:
            raise ValueError("resume_only needs out, the folder of an earlier sweep")
        left = [f"{name} {params} delta={d}" for (g, params, name, d), m in zip(configs, missing) if m]
        if left:
            import warnings

            warnings.warn(f"resume_only: {len(left)} configuration(s) not complete on disk, left out: "
                          + "; ".join(left[:20]) + (" ..." if len(left) > 20 else ""), stacklevel=2)
        configs = [c for c, m in zip(configs, missing) if not m]
        missing = [False] * len(configs)
    pending: dict[str, bool] = {}
    for (g, params, _, _), m in zip(configs, missing):
        point = point_of(g, params)
        pending[point] = pending.get(point, False) or m
    bar = progress_bar.Bar(len(configs), desc="sweep", unit="config", enabled=progress_bar.wanted(progress))
    frames = []
    drawn: dict[str, tuple[Instance | None, _PointInfo, np.ndarray]] = {}
    try:
        for g, params, name, delta in configs:
            point = point_of(g, params)
            J = g.n_instances
            if point not in drawn:
                metas = [meta_cache.get((point, j)) for j in range(J)]
                have_t = [tstar_cache.get((point, j)) for j in range(J)]
                have_all_t = all(h is not None for h in have_t)
                if not pending[point] and all(m is not None for m in metas) and (have_all_t or not lower_bound):
                    insts, info = None, _PointInfo(np.asarray([m["noise"] for m in metas], float), int(metas[0]["K"]),
                                                   int(metas[0]["d"]), int(metas[0]["M"]))
                else:
                    insts = g.draw(key_for(base, point), params)
                    info = _PointInfo(np.asarray(jax.device_get(insts.noise), float).reshape(-1), insts.num_arms,
                                      insts.dim, insts.num_items)
                    if meta_path is not None and not all(m is not None for m in metas):
                        new = not meta_path.exists()
                        pd.DataFrame(dict(point=point, instance=np.arange(J), noise=info.noise, K=info.K, d=info.d,
                                          M=info.M)).to_csv(meta_path, mode="a", header=new, index=False)
                tstar = np.full(J, np.nan)
                if lower_bound:
                    if have_all_t:
                        tstar = np.asarray(have_t, float)
                    else:
                        tstar = _characteristic_times(insts if buckets is None else pad_to(insts, *buckets.shape_for(insts)))
                        if inst_path is not None:
                            new = not inst_path.exists()
                            pd.DataFrame(dict(point=point, instance=np.arange(J), T_star=tstar)).to_csv(
                                inst_path, mode="a", header=new, index=False)
                drawn[point] = (insts, info, tstar)
            insts, info, tstar = drawn[point]
            alg = algorithm_at(name, delta)
            label = label_of(name, point, delta)
            todo = store.todo(label, J, n_reps)
            recs = store.records(label, J, n_reps)
            bar.status(f"{name} {g.name} {params} delta={delta}")
            if todo.size:
                cap = max_steps(alg, insts) if callable(max_steps) else int(max_steps)
                # the keys hash the configuration's label as a JSON string (as sweeps always have, so
                # that a sweep's numbers reproduce across versions); paired: without the algorithm
                key_config = json.dumps(dict(point=point, delta=delta) if paired else config_of(name, point, delta),
                                        sort_keys=True, default=str)
                simulate(alg, insts, key_for(base, key_config), n_reps, cap, tasks=todo,
                         on_chunk=store.recorder(label, n_reps, also=recs.extend), record_pulls=False, buckets=buckets,
                         progress=False, **simulate_kw)
            df = pd.DataFrame(recs, columns=["instance", "rep", "samples", "steps", "correct", "stopped", "answer"])
            df.insert(0, "algorithm", name)
            df.insert(1, "generator", g.name)
            for k, v in params.items():
                df[k] = v
            df["delta"] = delta if delta is not None else getattr(alg, "delta", np.nan)
            df["noise"] = info.noise[df["instance"].to_numpy()]
            df["K"], df["d"], df["M"] = info.K, info.d, info.M
            padded = buckets is not None and alg.supports_padding
            df["K_bucket"], df["M_bucket"] = ((buckets.size(info.K) if buckets.arms else info.K,
                                               buckets.size(info.M) if buckets.items else info.M) if padded
                                              else (info.K, info.M))
            bai = alg.top_m == 1 and alg.slack == 0.0 and not alg.fixed_budget
            ts = tstar[df["instance"].to_numpy()]
            df["T_star"] = ts if bai else np.nan
            d_ = float(df["delta"].iloc[0]) if len(df) else np.nan
            df["lower_bound"] = df["noise"] ** 2 * df["T_star"] * (_kl(d_) if d_ == d_ else np.nan)
            lead = ["algorithm", "generator", *params, "delta", "instance", "rep"]
            df = df[lead + [c for c in df.columns if c not in lead]]
            frames.append(df.sort_values(["instance", "rep"]))
            bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        import sys

        saved = (f"finished chunks are saved in {store.path}; the same call resumes from there" if store.path
                 else "nothing was saved (pass out=... to keep finished chunks and resume)")
        print(f"sweep interrupted after {len(frames)} of {len(configs)} configurations: {saved}", file=sys.stderr)
        raise
    finally:
        bar.close()
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# ------------------------------------------------------------------------------------------------
# summaries and the standard figures
# ------------------------------------------------------------------------------------------------
def summary(df, by: Sequence[str], level: float = 0.95):
    """One row per group: :func:`jaxbandits.stats.summarize` of its runs (runs, stopped, capped fraction, mean (over stopped runs) with its SE,
    ``mean_counting_capped`` (the mean over all runs, capped runs at their pulls so far: a lower
    bound on the mean stopping time), the error rate with its Clopper-Pearson interval (over
    stopped runs), the mean lower bound sigma^2 T* kl(delta, 1 - delta) (``lower_bound``), and
    ``ratio`` = mean / lower bound (NaN when some runs were capped: the stopped-run mean is then
    biased low) with ``ratio_at_least`` = mean_counting_capped / lower bound (always a valid lower
    bound on the ratio)."""
    import pandas as pd

    from jaxbandits.stats import summarize

    out = []
    for keys, g in df.groupby(list(by), sort=False, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        s = summarize(g["samples"].to_numpy(), g["correct"].to_numpy(bool), g["stopped"].to_numpy(bool), level)
        lb = float(g["lower_bound"].mean()) if "lower_bound" in g else math.nan
        finite = bool(lb) and lb == lb
        s.update(lower_bound=lb, ratio=s["mean"] / lb if finite and s["frac_capped"] == 0 else math.nan,
                 ratio_at_least=s["mean_counting_capped"] / lb if finite else math.nan)
        out.append(dict(zip(by, keys), **s))
    return pd.DataFrame(out)


def per_instance_ratio(df, by: Sequence[str]):
    """E[tau] / lower bound per instance (mean over its replications; capped runs counted at their
    pulls, so the ratio is a lower bound when some runs were capped): one row per (by, instance)."""
    cols = list(by) + ["instance"]
    g = df.groupby(cols, sort=False)
    res = g.agg(mean=("samples", "mean"), lower_bound=("lower_bound", "first"),
                capped=("stopped", lambda s: 1.0 - s.astype(bool).mean())).reset_index()
    res["ratio"] = res["mean"] / res["lower_bound"]
    return res


def plot_sample_complexity(df, x: str, *, hue: str = "algorithm", ratio: bool = False, ax=None,
                           logy: bool = True):
    """Mean sample complexity (or its ratio to the lower bound with ``ratio=True``) against the
    parameter ``x``, one line per ``hue``, with +- 2 SE bars."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 4))[1]
    s = summary(df, [hue, x])
    for h, g in s.groupby(hue, sort=False):
        g = g.sort_values(x)
        y = g["ratio"] if ratio else g["mean"]
        e = 2 * g["se"] / (g["lower_bound"] if ratio else 1.0)
        ax.errorbar(g[x], y, yerr=e, marker="o", capsize=3, label=str(h))
    ax.set_xlabel(x)
    ax.set_ylabel("E[tau] / lower bound" if ratio else "mean sample complexity")
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize="small")
    return ax


def plot_error_rate(df, x: str, *, hue: str = "algorithm", ax=None, delta: float | None = None):
    """Error rate against ``x`` with 95 % Clopper-Pearson intervals, one line per ``hue``; a
    dashed line at ``delta`` when given."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 4))[1]
    s = summary(df, [hue, x])
    for h, g in s.groupby(hue, sort=False):
        g = g.sort_values(x)
        ax.errorbar(g[x], g["error_rate"], yerr=[g["error_rate"] - g["error_lo"], g["error_hi"] - g["error_rate"]],
                    marker="o", capsize=3, label=str(h))
    if delta is not None:
        ax.axhline(delta, ls="--", c="grey", label=f"delta = {delta}")
    ax.set_xlabel(x)
    ax.set_ylabel("error rate (95 % Clopper-Pearson)")
    ax.legend(fontsize="small")
    return ax


def plot_ratio_distribution(df, *, by: str = "algorithm", panel: Sequence[str] = (), ax=None):
    """Box plots of the per-instance E[tau] / lower bound (:func:`per_instance_ratio`), one box per
    ``by`` value (log scale): how far from optimal each algorithm is across a distribution of
    instances."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 4))[1]
    r = per_instance_ratio(df, [by, *panel])
    labels = list(dict.fromkeys(r[by]))
    data = [r.loc[r[by] == lab, "ratio"].dropna().to_numpy() for lab in labels]
    ax.boxplot(data, orientation="horizontal", tick_labels=[str(lab) for lab in labels], showfliers=True)
    ax.set_xscale("log")
    ax.set_xlabel("E[tau] / lower bound, per instance")
    return ax

# float64 inside the public functions, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), ["sweep"])
