"""Sweeps as a first-class job: algorithms x instance distributions (with their parameters) x delta
x replications, run on the engine, returned as a tidy :class:`pandas.DataFrame`.

>>> df = sweep({"RAGE": RAGE(), "LT&S": LazyTrackAndStop()},
...            Generator("sphere", seeds.unit_sphere, {"dim": [2, 5], "num_arms": [10, 100]}, n_instances=20),
...            deltas=[0.05, 0.01], n_reps=10, out="results/my_sweep")
>>> summary(df, ["algorithm", "dim", "num_arms", "delta"])

One row per replication: the algorithm, the generator, every parameter of the grid, delta, the
instance and replication indices, the stopping time (``samples``), steps, correctness, whether the
run stopped before the cap, the returned item(s), the instance's noise scale, and the lower bound
sigma^2 T*(theta) kl(delta, 1 - delta) of seed 000 Thm 1 (for best-arm identification; on K-armed
Bernoulli instances T*(mu) kl(delta, 1 - delta) of the Bernoulli family, Garivier & Kaufmann 2016,
Theorem 1: :func:`jaxbandits.design.karmed.characteristic_time`; on K-armed Gaussian instances with
per-arm noise ``arm_noise``, T*(mu, sigma^2) kl(delta, 1 - delta) with the arms' own variances,
:func:`jaxbandits.design.karmed.heteroscedastic_weights`).

Reproducibility: the instances of a grid point depend only on (key, generator name, parameters),
so every algorithm and every delta sees the same instances (paired comparisons); the replications
of a configuration depend only on (key, configuration label, instance, replication).  With ``out``
every finished chunk is appended to ``out/rows.csv`` (:mod:`jaxbandits.store`, the experiments'
store; the seconds and layout of the runs that computed them in ``out/rows.runs.jsonl``), and a
rerun reads back what is there for the same key and the same code version of the algorithm, with
the seconds measured when it was computed, and runs only what is missing (an interrupted sweep
loses at most the chunk in flight; a change of the code an algorithm depends on reruns its
configurations); T*(theta) of each instance is kept in ``out/instances.csv``, its noise scale and
shapes in ``out/instance_meta.csv``, so that a grid point whose configurations are all finished is
not drawn again.

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
import jax.numpy as jnp
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
    scale: np.ndarray  # the lower bound's unit: sigma^2 (Gaussian T*), 1 (Bernoulli K-armed T*)


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


def _bernoulli_k_armed(instances: Instance) -> bool:
    """Whether the instances are K-armed bandits (arms = items = the identity) with Bernoulli
    rewards, whose T* is the Bernoulli family's (host side)."""
    if instances.model != "bernoulli":
        return False
    X, Z = np.asarray(instances.arms), np.asarray(instances.items)
    K = X.shape[-2]
    return X.shape[-1] == K and np.array_equal(X, np.broadcast_to(np.eye(K), X.shape)) and np.array_equal(X, Z)


def _k_armed(instances: Instance) -> bool:
    """Whether the instances are K-armed bandits: arms = items = the identity (host side)."""
    X, Z = np.asarray(instances.arms), np.asarray(instances.items)
    K = X.shape[-2]
    return X.shape[-1] == K and np.array_equal(X, np.broadcast_to(np.eye(K), X.shape)) and np.array_equal(X, Z)


def _heteroscedastic_k_armed(instances: Instance) -> bool:
    """Whether the instances are K-armed Gaussian bandits with per-arm noise (``arm_noise``), whose
    T* is the heteroscedastic T*(mu, sigma^2) (host side)."""
    return instances.model == "gaussian" and instances.arm_noise is not None and _k_armed(instances)


def _characteristic_times(instances: Instance) -> np.ndarray:
    """T* per instance: the Bernoulli family's T*(mu) on K-armed Bernoulli instances (Garivier &
    Kaufmann 2016, Theorem 1); on K-armed Gaussian instances with per-arm noise the T*(mu, sigma^2)
    of the known per-arm variances (:func:`jaxbandits.design.karmed.heteroscedastic_weights`, in
    absolute units: the variances are in it); else the Gaussian T*(theta) of unit variance (seed
    000 Thm 1)."""
    if _bernoulli_k_armed(instances):
        from jaxbandits.design import karmed

        return np.asarray(jax.device_get(karmed.characteristic_time(instances.theta, "bernoulli")), float)
    if _heteroscedastic_k_armed(instances):
        from jaxbandits.design import karmed

        mu = instances.theta
        sigma = instances.arm_noise
        if instances.arm_mask is not None:  # padded arms: means far below the rest count for nothing
            mask = np.asarray(instances.arm_mask)
            fn = lambda m, s, k: karmed.heteroscedastic_weights(m, s, mask=k).value  # noqa: E731
            for _ in range(np.ndim(mu) - 1):
                fn = jax.vmap(fn)
            return np.asarray(jax.device_get(fn(mu, sigma, jnp.asarray(mask))), float).reshape(np.shape(mu)[:-1])
        return np.asarray(jax.device_get(karmed.characteristic_time(mu, "gaussian", sigma=sigma)), float)
    from jaxbandits.design import characteristic_time

    return np.asarray(jax.device_get(characteristic_time(instances)), float)


def _lower_bound_scale(noise: np.ndarray, absolute: bool) -> np.ndarray:
    """The unit of T*: sigma^2 for the Gaussian T* of unit variance, 1 for the Bernoulli family's
    and for the heteroscedastic T*(mu, sigma^2) (``absolute``: the variances are in T*)."""
    return np.ones_like(noise) if absolute else noise**2


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
      progress: a progress bar over configurations (:mod:`jaxbandits.progress`; what is being
        drawn, solved or run, with each run's bar of replications under it): None (default) when
        stderr is a terminal, True always, False never.
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
      A :class:`pandas.DataFrame` with one row per replication (see the module docstring); its
      ``attrs`` say what was read back from ``out`` and what was computed
      (``replications_read_back``, ``replications_computed``, ``configurations_read_back``) and
      how long the configurations took when they were computed (``seconds``, the engine's wall +
      compile seconds; ``seconds_read_back``, of those read back in full; ``measured``, label ->
      :meth:`jaxbandits.store.Store.measured`).
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
    # what was read back and what was computed (returned in the table's attrs)
    back = dict(replications_read_back=0, replications_computed=0, configurations_read_back=0,
                seconds_read_back=0.0, seconds=0.0)
    measured: dict[str, dict] = {}
    drawn: dict[str, tuple[Instance | None, _PointInfo, np.ndarray]] = {}
    try:
        for g, params, name, delta in configs:
            point = point_of(g, params)
            J = g.n_instances
            point_text = f"{g.name} " + (", ".join(f"{k}={v}" for k, v in params.items()) or "-")
            if point not in drawn:
                metas = [meta_cache.get((point, j)) for j in range(J)]
                have_t = [tstar_cache.get((point, j)) for j in range(J)]
                have_all_t = all(h is not None for h in have_t)
                if not pending[point] and all(m is not None for m in metas) and (have_all_t or not lower_bound):
                    noise = np.asarray([m["noise"] for m in metas], float)
                    # tables written before the Bernoulli T* have no lb_scale: sigma^2 as then
                    scale = np.asarray([m.get("lb_scale", np.nan) for m in metas], float)
                    insts, info = None, _PointInfo(noise, int(metas[0]["K"]), int(metas[0]["d"]), int(metas[0]["M"]),
                                                   np.where(np.isnan(scale), noise**2, scale))
                else:
                    bar.status(f"drawing {J} instance(s): {point_text}")
                    insts = g.draw(key_for(base, point), params)
                    noise = np.asarray(jax.device_get(insts.noise), float).reshape(-1)
                    absolute = _bernoulli_k_armed(insts) or _heteroscedastic_k_armed(insts)
                    info = _PointInfo(noise, insts.num_arms, insts.dim, insts.num_items,
                                      _lower_bound_scale(noise, absolute))
                    if meta_path is not None and not all(m is not None for m in metas):
                        new = not meta_path.exists()
                        pd.DataFrame(dict(point=point, instance=np.arange(J), noise=info.noise, K=info.K, d=info.d,
                                          M=info.M, lb_scale=info.scale)).to_csv(meta_path, mode="a", header=new,
                                                                                 index=False)
                tstar = np.full(J, np.nan)
                if lower_bound:
                    if have_all_t:
                        tstar = np.asarray(have_t, float)
                    else:
                        bar.status(f"T* of {J} instance(s): {point_text}")
                        # the Bernoulli and heteroscedastic K-armed T*: unpadded
                        unpadded = _bernoulli_k_armed(insts) or _heteroscedastic_k_armed(insts)
                        pad_t = buckets is not None and not unpadded
                        tstar = _characteristic_times(pad_to(insts, *buckets.shape_for(insts)) if pad_t else insts)
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
            if recs:
                back["replications_read_back"] += len(recs)
                back["configurations_read_back"] += 1
            bar.status(f"{name}" + (f", delta={delta}" if delta is not None else "") + f" | {point_text}")
            if todo.size:
                cap = max_steps(alg, insts) if callable(max_steps) else int(max_steps)
                # the keys hash the configuration's label as a JSON string (as sweeps always have, so
                # that a sweep's numbers reproduce across versions); paired: without the algorithm
                key_config = json.dumps(dict(point=point, delta=delta) if paired else config_of(name, point, delta),
                                        sort_keys=True, default=str)
                res = simulate(alg, insts, key_for(base, key_config), n_reps, cap, tasks=todo,
                               on_chunk=store.recorder(label, n_reps, also=recs.extend), record_pulls=False,
                               buckets=buckets, progress=bar.enabled, **simulate_kw)
                store.record_run(label, res)
                back["replications_computed"] += int(todo.size)
            m = store.measured(label)
            if m is not None:
                measured[label] = m
                back["seconds"] += m["wall_time"] + m["compile_time"]
                if not todo.size:
                    back["seconds_read_back"] += m["wall_time"] + m["compile_time"]
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
            df["lower_bound"] = (info.scale[df["instance"].to_numpy()] * df["T_star"]
                                 * (_kl(d_) if d_ == d_ else np.nan))
            lead = ["algorithm", "generator", *params, "delta", "instance", "rep"]
            df = df[lead + [c for c in df.columns if c not in lead]]
            frames.append(df.sort_values(["instance", "rep"]))
            bar.update(1)
        bar.status("")  # the bar that stays says only what was done
    except KeyboardInterrupt:
        bar.close()
        import sys

        saved = (f"finished chunks are saved in {store.path}; the same call resumes from there" if store.path
                 else "nothing was saved (pass out=... to keep finished chunks and resume)")
        print(f"sweep interrupted after {len(frames)} of {len(configs)} configurations: {saved}", file=sys.stderr)
        raise
    finally:
        bar.close()
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table.attrs.update(back, measured=measured)
    return table


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


def _axes(ax, panel, legend: bool = True):
    """``ax``, or the axes of a new figure (constrained layout, :mod:`jaxbandits.plotting`; room
    for a legend beside the axes when ``legend``)."""
    if ax is not None:
        return ax
    from jaxbandits.plotting import new_figure

    return new_figure(panel=panel, extra=(2.2 if legend else 0.0, 0.0))[1][0, 0]


def _series_by_hue(ax, s, x: str, hue: str, y, err, logx: bool | None) -> None:
    """One error-bar series per ``hue`` value of the summary ``s`` against the grid ``x``: a colour
    and a marker each, dodged sideways at each grid value, ``x`` ticked at its values (a log axis
    when ``logx``; None: when the values are positive and span a factor 20 or more; values that
    are not numbers are placed at 0, 1, ... and named)."""
    from jaxbandits.plotting import dodge, grid_axis, series_styles

    grid = list(dict.fromkeys(s[x]))
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v) for v in grid)
    if numeric:
        grid = sorted(float(v) for v in grid)
        pos = {v: float(v) for v in grid}
        if logx is None:
            logx = min(grid) > 0 and max(grid) >= 20 * min(grid)
    else:
        pos = {v: float(k) for k, v in enumerate(grid)}
        logx = False
    hues = list(dict.fromkeys(s[hue]))
    style = series_styles(str(h) for h in hues)
    for i, h in enumerate(hues):
        g = s[s[hue] == h].copy()
        g["_x"] = [pos[v if not numeric else float(v)] for v in g[x]]
        g = g.sort_values("_x")
        ax.errorbar(dodge(g["_x"], i, len(hues), grid=list(pos.values()), log=logx), y(g), yerr=err(g), ms=5,
                    capsize=3, label=str(h), **style[str(h)])
    grid_axis(ax, list(pos.values()), log=logx, labels=None if numeric else [str(v) for v in grid])
    ax.set_xlabel(x)


def plot_sample_complexity(df, x: str, *, hue: str = "algorithm", ratio: bool = False, ax=None,
                           logy: bool = True, logx: bool | None = None):
    """Mean sample complexity (or its ratio to the lower bound with ``ratio=True``) against the
    parameter ``x``, one series per ``hue`` (a colour and a marker each, dodged sideways at each
    value of ``x`` so that equal values stay visible), with +- 2 SE bars and the legend to the
    right of the axes; ``x`` is ticked at its values (``logx``: a log axis; None: when its values
    span a factor 20 or more).  Draws into ``ax`` or a new figure; returns the axes."""
    from jaxbandits.plotting import legend_outside, plain_log_ticks

    ax = _axes(ax, (5.0, 3.6))
    s = summary(df, [hue, x])
    _series_by_hue(ax, s, x, hue, lambda g: g["ratio"] if ratio else g["mean"],
                   lambda g: 2 * g["se"] / (g["lower_bound"] if ratio else 1.0), logx)
    ax.set_ylabel("E[tau] / lower bound" if ratio else "mean sample complexity (pulls)")
    if logy:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    legend_outside(ax, title="error bars: $\\pm$ 2 SE")
    return ax


def plot_error_rate(df, x: str, *, hue: str = "algorithm", ax=None, delta: float | None = None,
                    logx: bool | None = None):
    """Error rate against ``x`` with 95 % Clopper-Pearson intervals, one series per ``hue`` (dodged
    sideways: error rates often tie, at 0); a dashed line at ``delta`` when given; ``x`` and
    ``logx`` as in :func:`plot_sample_complexity`.  Returns the axes."""
    from jaxbandits.plotting import legend_outside

    ax = _axes(ax, (5.0, 3.6))
    s = summary(df, [hue, x])
    _series_by_hue(ax, s, x, hue, lambda g: g["error_rate"],
                   lambda g: [g["error_rate"] - g["error_lo"], g["error_hi"] - g["error_rate"]], logx)
    if delta is not None:
        ax.axhline(delta, ls="--", c="grey", label=f"delta = {delta}")
    ax.set_ylabel("error rate (95 % Clopper-Pearson)")
    legend_outside(ax)
    return ax


def plot_ratio_distribution(df, *, by: str = "algorithm", panel: Sequence[str] = (), ax=None,
                            order: Sequence | None = None):
    """Box plots of the per-instance E[tau] / lower bound (:func:`per_instance_ratio`), one box per
    ``by`` value (log scale), the first on top: how far from optimal each algorithm is across a
    distribution of instances.  ``order``: the ``by`` values to give a row, in order (a value with
    no runs keeps its empty row, so that panels drawn with one order line up).  Returns the axes."""
    from jaxbandits.plotting import plain_log_ticks

    r = per_instance_ratio(df, [by, *panel])
    labels = list(order) if order is not None else list(dict.fromkeys(r[by]))
    ax = _axes(ax, (5.6, 0.32 * len(labels) + 1.2), legend=False)
    data = [r.loc[r[by] == lab, "ratio"].dropna().to_numpy() for lab in labels]
    have = [i for i, d in enumerate(data) if len(d)]
    if have:
        ax.boxplot([data[i] for i in have], positions=[i + 1 for i in have], orientation="horizontal",
                   showfliers=True, widths=0.6, manage_ticks=False)
    ax.set_yticks(range(1, len(labels) + 1), [str(lab) for lab in labels])
    ax.set_ylim(len(labels) + 0.5, 0.5)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("E[tau] / lower bound, per instance")
    ax.set_ylabel(by)
    return ax

# float64 inside the public functions, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), ["sweep"])
