"""The one entry point of every experiment: ``python -m experiments NAME`` (or ``jaxbandits NAME``).

An experiment is a module ``experiments/<name>.py`` with ``NAME``, ``DESCRIPTION`` and
``run(ctx)``; modules are discovered automatically.  A run writes, under ``--out`` (default
``results/<NAME>``):

* ``results.csv``: one row per replication (label of the configuration as JSON, instance, rep,
  samples, steps, correct, stopped, answer), appended chunk by chunk as the run goes;
* ``metadata.json``: library, JAX and Python versions, devices, seed, arguments, the
  experiment's configuration (``ctx.config``) and wall time, enough to regenerate the results;
* ``<table>.md``: the summary tables (also printed);
* ``<rows>.csv``: per-instance rows of experiments without replications (``ctx.write_rows``);
* ``<plot>.png``: the plots.

Rerunning with the same arguments resumes: replications already in ``results.csv`` (matched by
label, instance and replication index, under the same seed) are read back, not recomputed; since
replication (j, i) depends only on (seed, label's key, j, i), the merged result is exactly what an
uninterrupted run gives.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import math
import os
import pkgutil
import platform
import sys
import time
from pathlib import Path
from typing import Any

EXPERIMENTS_DIR = Path(__file__).resolve().parent


def _set_cpu_devices(n: int | None) -> None:
    """Expose ``n`` XLA CPU devices (must run before jax is imported): the engine then runs one
    loop per device, 1.4-2.4x faster on 2 cores in DESIGN.md's probe.

    Not the default: no speed-up from a second device could be measured on a loaded 2-core
    machine.  (With jaxlib 0.10.x it also deadlocked -- batched LAPACK calls on every pool thread
    at once, :mod:`jaxbandits.watchdog` -- which the required jaxlib version rules out.)
    """
    if "jax" in sys.modules or not n:
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags and n > 1:
        os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()


def discover() -> dict[str, str]:
    """Map experiment NAME -> module name, for every ``experiments/<module>.py`` defining ``run``."""
    found = {}
    for info in pkgutil.iter_modules([str(EXPERIMENTS_DIR)]):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"experiments.{info.name}")
        if hasattr(mod, "run"):
            found[getattr(mod, "NAME", info.name)] = info.name
    return dict(sorted(found.items()))


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return str(v)


def markdown_table(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)\n"
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
    return "\n".join(lines) + "\n"


class Context:
    """What an experiment's ``run(ctx)`` gets: arguments, output folder, and the run helpers."""

    CSV_FIELDS = ["label", "seed", "instance", "rep", "samples", "steps", "correct", "stopped", "answer"]

    def __init__(self, name: str, reps: int | None, seed: int, out: Path, quick: bool, quiet: bool = False,
                 started: float | None = None):
        import jax


        self.name = name
        self.reps = reps
        self.seed = seed
        self.quick = quick
        self.quiet = quiet
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.key = jax.random.key(seed)
        self.config: dict[str, Any] = {}
        self.csv_path = self.out / "results.csv"
        self._done: dict[tuple[str, int], dict[tuple[int, int], dict]] = {}
        if self.csv_path.exists():
            with open(self.csv_path, newline="") as f:
                for row in csv.DictReader(f):
                    k = (row["label"], int(row["seed"]))
                    self._done.setdefault(k, {})[(int(row["instance"]), int(row["rep"]))] = row
        self._t0 = time.perf_counter()
        # wall time of the whole command, across restarts in fresh processes (_restart)
        self._started = time.time() if started is None else float(started)
        self.resumed = 0
        self.layouts: dict[str, dict] = {}  # label -> the engine's Layout (device-aware choices)

    # -- helpers for experiments ------------------------------------------------------------
    def log(self, msg: str) -> None:
        if not self.quiet:
            print(msg, flush=True)

    def n_reps(self, default: int, quick: int) -> int:
        """Replications for this run: ``--reps`` if given, else ``quick`` under ``--quick``,
        else ``default``."""
        if self.reps is not None:
            return int(self.reps)
        return int(quick if self.quick else default)

    def label_key(self, label: dict) -> "jax.Array":
        """A key derived from the seed and the configuration label only (stable across runs and
        orderings of configurations)."""
        import zlib

        import jax

        h = zlib.crc32(json.dumps(label, sort_keys=True, default=str).encode()) & 0x7FFFFFFF
        return jax.random.fold_in(self.key, h)

    def simulate(self, label: dict, algorithm, instances, n_reps: int, max_steps: int, **kw):
        """:func:`jaxbandits.engine.simulate` with per-replication CSV output and resume.

        ``label`` (a JSON-able dict) names the configuration; the PRNG key is derived from the
        seed and the label, so configurations are independent and a rerun reproduces them.
        """
        import numpy as np

        from jaxbandits.engine import Results, simulate
        from jaxbandits.instances.base import as_batch

        lab = json.dumps(label, sort_keys=True, default=str)
        inst = as_batch(instances)
        J = inst.batch_shape[0]
        have = self._done.get((lab, self.seed), {})
        todo = [j * n_reps + i for j in range(J) for i in range(n_reps) if (j, i) not in have]
        M, K = inst.num_items, inst.num_arms
        self.log(f"[{self.name}] {lab}: {J} instance(s) x {n_reps} reps"
                 + (f" ({J * n_reps - len(todo)} read back from disk)" if len(todo) < J * n_reps else ""))
        new_file = not self.csv_path.exists()
        f = open(self.csv_path, "a", newline="")
        writer = csv.DictWriter(f, fieldnames=self.CSV_FIELDS)
        if new_file:
            writer.writeheader()

        def on_chunk(tids, arrs):
            for n, t in enumerate(tids):
                j, i = divmod(int(t), n_reps)
                writer.writerow(dict(label=lab, seed=self.seed, instance=j, rep=i,
                                     samples=int(arrs["samples"][n]), steps=int(arrs["steps"][n]),
                                     correct=int(arrs["correct"][n]), stopped=int(arrs["stopped"][n]),
                                     answer=" ".join(map(str, np.flatnonzero(arrs["answer"][n])))))
            f.flush()

        key = self.label_key(label)
        try:
            if todo:
                res = simulate(algorithm, instances, key, n_reps, max_steps, tasks=np.asarray(todo),
                               on_chunk=on_chunk, progress=(self.log if not self.quiet else False), **kw)
            else:
                res = None
        finally:
            f.close()
        if res is not None and res.layout is not None:
            import dataclasses

            self.layouts[lab] = dataclasses.asdict(res.layout)
        shape = (J, n_reps)
        if res is None:
            res = Results(samples=np.zeros(shape, np.int64), steps=np.zeros(shape, np.int64),
                          correct=np.zeros(shape, bool), stopped=np.zeros(shape, bool),
                          answer=np.zeros(shape + (M,), bool), pulls=None, ran=np.zeros(shape, bool),
                          efficiency=float("nan"), wall_time=0.0, compile_time=0.0, lane_steps=0,
                          useful_steps=0, devices=0, lanes=0, chunk_size=0,
                          error_defined=not algorithm.correct_by_construction)
        for (j, i), row in have.items():
            if j < J and i < n_reps:
                res.samples[j, i] = int(row["samples"])
                res.steps[j, i] = int(row["steps"])
                res.correct[j, i] = bool(int(row["correct"]))
                res.stopped[j, i] = bool(int(row["stopped"]))
                res.answer[j, i] = False
                for a in row["answer"].split():
                    res.answer[j, i, int(a)] = True
                res.ran[j, i] = True
                res.pulls = None
                self.resumed += 1
        return res

    def table(self, rows: list[dict], name: str = "summary", title: str | None = None) -> str:
        """Print and save (``<name>.md``) a Markdown table of summary rows."""
        text = (f"### {title}\n\n" if title else "") + markdown_table(rows)
        (self.out / f"{name}.md").write_text(text)
        self.log(text)
        return text

    def write_rows(self, rows, name: str) -> Path:
        """Save per-replication (or, without replications, per-instance) rows as ``<name>.csv``
        beside the summary: a list of dicts or a DataFrame, one column per field."""
        import pandas as pd

        path = self.out / f"{name}.csv"
        (rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))).to_csv(path, index=False)
        self.log(f"[{self.name}] wrote {path}")
        return path

    def savefig(self, fig, name: str = "plot") -> Path:
        path = self.out / f"{name}.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(fig)
        self.log(f"[{self.name}] wrote {path}")
        return path

    def write_metadata(self, args: dict, status: str) -> None:
        import jax

        import jaxbandits

        meta = dict(
            experiment=self.name, status=status, seed=self.seed, args=args, config=self.config,
            jaxbandits=jaxbandits.__version__, jax=jax.__version__,
            jaxlib=getattr(__import__("jaxlib"), "__version__", "?"),
            python=platform.python_version(), platform=platform.platform(),
            devices=[str(d) for d in jax.devices()], backend=jax.default_backend(),
            x64=bool(jax.config.jax_enable_x64), wall_time=time.time() - self._started,
            replications_read_back=self.resumed, layouts=self.layouts,
            engine_programs_compiled=_programs_compiled(),
            engine_compile_seconds=_compile_seconds(), compile_cache=_cache_counts(),
            peak_memory_mappings=_peak_mappings(), programs_released=_releases(),
            command=" ".join(sys.argv),
        )
        (self.out / "metadata.json").write_text(json.dumps(meta, indent=2, default=str))


def _peak_mappings() -> int | None:
    from jaxbandits import programs

    return programs.peak_mappings()


def _releases() -> int:
    from jaxbandits import programs

    return programs.releases()


def _compile_seconds() -> float:
    from jaxbandits.engine import compile_seconds

    return compile_seconds()


def _cache_counts() -> dict:
    from jaxbandits import compilation_cache

    return compilation_cache.counts()


def _programs_compiled() -> int:
    """Engine programs compiled by this process (cache misses; a persistent-cache hit still
    counts, since the program is traced and loaded again)."""
    from jaxbandits.engine import programs_compiled

    return programs_compiled()


MAX_RESTARTS = 5  # after a stall


def _restart(err: Exception, argv: list[str] | None, started: float | None = None) -> None:
    """Start the same command again in a fresh process after a
    :class:`~jaxbandits.watchdog.StalledComputation`: the XLA:CPU runtime wedged
    (:mod:`jaxbandits.watchdog`) and stays wedged in this process (at most ``MAX_RESTARTS``).

    Everything finished is in results.csv and is read back, so only the chunk in flight is
    recomputed (and identically: replications depend only on their keys).  (The limit on memory
    mappings needs no restart: the engine drops its compiled programs before it is reached,
    :mod:`jaxbandits.programs`.)"""
    n = int(os.environ.get("JAXBANDITS_RESTARTS", "0"))
    if n >= MAX_RESTARTS:
        raise err
    print(f"[experiments] {err}\n[experiments] restarting in a fresh process ({n + 1}/{MAX_RESTARTS}); "
          "finished replications are read back from disk", file=sys.stderr, flush=True)
    os.environ["JAXBANDITS_RESTARTS"] = str(n + 1)
    if started is not None:  # the restarted process reports the whole command's wall time
        os.environ["JAXBANDITS_RUN_STARTED"] = repr(started)
    args = list(sys.argv[1:] if argv is None else argv)
    os.execv(sys.executable, [sys.executable, "-m", "experiments", *args])


def main(argv: list[str] | None = None, restart: bool = False) -> int:
    """Run an experiment.  ``restart=True`` (the command line, ``python -m experiments``) lets a
    process that stalls replace itself with a fresh one that resumes from disk; called as a
    function (tests, notebooks) the process is never replaced and the error propagates."""
    parser = argparse.ArgumentParser(prog="python -m experiments",
                                     description="Reproduce the seed papers' tables and figures.")
    parser.add_argument("name", nargs="?", help="experiment to run (omit to list them)")
    parser.add_argument("--reps", type=int, default=None, help="replications per configuration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=str, default=None, help="output folder (default results/NAME)")
    parser.add_argument("--quick", action="store_true", help="small version finishing in seconds")
    parser.add_argument("--devices", type=int, default=None,
                        help="XLA CPU devices to expose (default: 1; try the number of cores)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help="do not use the persistent compilation cache (default: on, in "
                             "~/.cache/jaxbandits/xla or $JAXBANDITS_COMPILATION_CACHE)")
    args = parser.parse_args(argv)
    _set_cpu_devices(args.devices)
    from jaxbandits import compilation_cache, precision

    # the experiments' own JAX code (not only the library's entry points) runs in float64
    precision.enable_globally()

    if not (args.no_compile_cache or compilation_cache.disabled_by_env()):
        args.compile_cache = str(compilation_cache.enable())
    import matplotlib

    matplotlib.use("Agg")
    found = discover()
    if not args.name:
        print("Experiments (python -m experiments NAME [--reps N] [--seed S] [--out DIR] [--quick]):")
        for name, mod in found.items():
            desc = getattr(importlib.import_module(f"experiments.{mod}"), "DESCRIPTION", "")
            print(f"  {name:28s} {desc}")
        return 0
    if args.name not in found:
        print(f"unknown experiment {args.name!r}; known: {', '.join(found)}", file=sys.stderr)
        return 2
    mod = importlib.import_module(f"experiments.{found[args.name]}")
    out = Path(args.out) if args.out else Path("results") / args.name
    ctx = Context(args.name, args.reps, args.seed, out, args.quick, args.quiet,
                  started=os.environ.pop("JAXBANDITS_RUN_STARTED", None))
    ctx.write_metadata(vars(args), "running")
    from jaxbandits.watchdog import StalledComputation

    try:
        mod.run(ctx)
    except StalledComputation as e:
        if not restart:
            raise
        _restart(e, argv, ctx._started)
    ctx.write_metadata(vars(args), "done")
    ctx.log(f"[{args.name}] done in {time.time() - ctx._started:.1f}s; results in {out}/")
    return 0
