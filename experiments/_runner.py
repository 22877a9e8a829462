"""The one entry point of every experiment: ``python -m experiments NAME`` (or ``jaxbandits NAME``).

An experiment is a module ``experiments/<name>.py`` with ``NAME``, ``DESCRIPTION`` and
``run(ctx)``; modules are discovered automatically.  A run writes, under ``--out`` (default
``results/<NAME>``):

* ``results.csv``: one row per replication (label, instance, rep, samples, steps, correct,
  stopped, answer; :mod:`jaxbandits.store`), appended chunk by chunk as the run goes;
* ``metadata.json``: library, JAX and Python versions, devices, seed, arguments, the
  experiment's configuration (``ctx.config``) and wall time, enough to regenerate the results;
* ``<table>.md``: the summary tables (also printed);
* ``<rows>.csv``: per-instance rows of experiments without replications (``ctx.write_rows``);
* ``<plot>.png``: the plots.

Rerunning with the same arguments resumes: replications already in ``results.csv`` (matched by
the configuration's label, the seed, the code version of the algorithm, the instance and the
replication index) are read back, not recomputed; since replication (j, i) depends only on (seed,
label's key, j, i), the merged result is exactly what an uninterrupted run gives.  After a change
of the code an algorithm's results depend on, its replications are computed again.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import platform
import sys
import time
from pathlib import Path
from typing import Any

EXPERIMENTS_DIR = Path(__file__).resolve().parent


def _set_cpu_devices(n: int | None) -> None:
    """Expose ``n`` XLA CPU devices (``jax.config.update("jax_num_cpu_devices", n)``; must run
    before JAX runs anything): the engine then runs one loop per device.

    Not the default: it pays on long runs (LT&S on many-arms K = 1000, the released code's
    configuration: 74 -> 186 replications/s with 2 devices on 2 cores), but a short run is
    dominated by compilation, which a second device does not shorten (``seed000_table1 --quick``:
    36 s with 1 device, 42 s with 2, one run each).  (With jaxlib 0.10.x it also deadlocked --
    batched LAPACK calls on every pool thread at once, :mod:`jaxbandits.watchdog` -- which the
    required jaxlib version rules out.)
    """
    if not n:
        return
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", int(n))
    except RuntimeError:  # JAX already ran something in this process: its devices are fixed
        if jax.default_backend() == "cpu" and len(jax.devices()) != n:
            print(f"[experiments] --devices {n} ignored: JAX already started with {len(jax.devices())} "
                  "device(s) in this process", file=sys.stderr, flush=True)


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


#: time of each experiment on 2 CPU cores, first run (empty compilation cache, nothing on disk):
#: (--quick seconds, full-size seconds, how the full size was obtained).  --quick: the CPU seconds
#: (user + system) of a cold run, measured on a 2-core machine shared with other jobs, where wall
#: time was several times longer than on an idle one (JAX's CPU programs here use about one core,
#: so CPU seconds are close to an idle machine's wall time).  Full size: "measured" for full runs
#: timed on the shared 2-core machine (the experiment's docstring gives the run); "estimate" for
#: the quick run's compilation seconds plus its replication seconds scaled by the ratio of the
#: full size's replications x points x algorithms to the quick run's (not run; rough, within a
#: factor of a few); "lower estimate" for the same computation where the full size's instances
#: are harder or larger than the quick run's (more samples or wider steps per replication), so the
#: full run takes longer, by more than that factor (the compilation seconds are split from the
#: replication seconds in the proportion of the quick run's engine_compile_seconds to its wall
#: time, metadata.json).
TIMES: dict[str, tuple[float | None, float | None, str]] = {
    "calibration": (135, 1512, "measured"),
    "design_hardest_theta": (240, 524, "measured"),
    "design_probe_set": (136, 414, "measured"),
    "design_sensitivity": (19, 120, "estimate"),
    # the reduced run of the docstring (every algorithm, a quarter of the replications) took 25 min
    "modern_vs_seeds": (442, 10000, "estimate"),
    "seed000_table1": (49, 3400, "measured"),
    # panel (a) at omega = 0.01 and XY-static's 2e6-6e6 pulls at d = 20-80 make it longer
    "seed001_fig1": (186, 8500, "lower estimate"),
    "seed001_fig2": (40, 3390, "estimate"),
    "seed002_adaptive": (14, 1410, "estimate"),
    "seed002_logistic": (24, 17820, "estimate"),
    "seed002_real_data": (15, 2130, "estimate"),
    "seed002_sphere": (34, 10380, "estimate"),
    "seed002_static": (15, 1300, "estimate"),
    "seed003_fig1": (66, 465, "measured"),
    "seed003_real_data": (22, 160, "estimate"),
    "seed003_table3": (33, 210, "estimate"),
    "seed003_table4": (9, 430, "estimate"),
    # the quick rows (LinGapE, the Oracle) are among the cheapest; LT&S, XY-adaptive, RAGE need more
    # the quick run has K = 10 only; K = 100 and 1000, d up to 20 and 9 more algorithms: a GPU job
    "sphere_sweep": (130, 48000, "lower estimate"),
    "tirinzoni_degenne_table1": (80, 19000, "lower estimate"),
}


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def listing(found: dict[str, str]) -> str:
    """The experiments with their estimated times (``python -m experiments``)."""
    w = max([22, *map(len, found)])
    lines = ["Experiments: python -m experiments NAME [--quick] [--reps N] [--seed S] [--out DIR] [--devices N]",
             "",
             "Times on 2 CPU cores, first run (a rerun loads compiled programs from the cache and reads",
             "finished replications back: much faster); ~ marks a full-size time estimated from the quick run,",
             "> one estimated the same way that the full size's harder or larger instances make longer.",
             "",
             f"  {'name':{w}s} {'--quick':>8s} {'full':>8s}  description"]
    for name, mod in found.items():
        desc = getattr(importlib.import_module(f"experiments.{mod}"), "DESCRIPTION", "")
        q, full, how = TIMES.get(name, (None, None, ""))
        f = {"estimate": "~", "lower estimate": ">"}.get(how, "") + _duration(full)
        lines.append(f"  {name:{w}s} {_duration(q):>8s} {f:>8s}  {desc}")
    return "\n".join(lines)


class Context:
    """What an experiment's ``run(ctx)`` gets: arguments, output folder, and the run helpers."""

    def __init__(self, name: str, reps: int | None, seed: int, out: Path, quick: bool, quiet: bool = False,
                 started: float | None = None):
        import jax

        from jaxbandits.store import Store

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
        self.store = Store(self.csv_path)
        self._t0 = time.perf_counter()
        # wall time of the whole command, across restarts in fresh processes (_restart)
        self._started = time.time() if started is None else float(started)
        self.resumed = 0
        self.layouts: dict[str, dict] = {}  # label -> the engine's Layout (device-aware choices)
        self.configurations = 0  # ctx.simulate calls so far
        self._bar = None  # one progress bar over configurations (jaxbandits.progress)

    # -- progress ------------------------------------------------------------------------------
    def _config_bar(self):
        """The bar over configurations, opened at the first one: its total is the count of the
        last finished run of the same command when there is one (metadata.json), else unknown."""
        if self._bar is None:
            from jaxbandits import progress

            total = None
            try:
                old = json.loads((self.out / "metadata.json").read_text())
                if old.get("status") == "done" and old.get("quick") == self.quick and old.get("reps") == self.reps:
                    total = int(old.get("configurations")) or None
            except (OSError, ValueError, TypeError):
                pass
            self._bar = progress.Bar(total, desc=self.name, unit="config", enabled=progress.wanted(None))
        return self._bar

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def rows_on_disk(self) -> int:
        """Replications in results.csv (what a rerun reads back)."""
        if not self.csv_path.exists():
            return 0
        with open(self.csv_path, newline="") as f:
            return max(0, sum(1 for _ in f) - 1)

    # -- helpers for experiments ------------------------------------------------------------
    def log(self, msg: str) -> None:
        if not self.quiet:
            if self._bar is not None:
                self._bar.write(msg)
            else:
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
        from jaxbandits.store import key_for

        return key_for(self.key, label)

    def simulate(self, label: dict, algorithm, instances, n_reps: int, max_steps: int, **kw):
        """:func:`jaxbandits.engine.simulate` with per-replication CSV output and resume.

        ``label`` (a JSON-able dict) names the configuration; the PRNG key is derived from the
        seed and the label, so configurations are independent and a rerun reproduces them.  The
        replications are stored under the label, the seed and the algorithm's code version
        (:func:`jaxbandits.store.run_label`): a rerun after a change of the code computes them again.
        """
        import dataclasses

        import numpy as np

        from jaxbandits.engine import Results, simulate
        from jaxbandits.instances.base import as_batch
        from jaxbandits.store import answer_items, run_label

        lab = json.dumps(label, sort_keys=True, default=str)
        stored = run_label(label, algorithm, self.seed)
        inst = as_batch(instances)
        J = inst.batch_shape[0]
        todo = self.store.todo(stored, J, n_reps)
        have = self.store.records(stored, J, n_reps)
        M = inst.num_items
        self.log(f"[{self.name}] {lab}: {J} instance(s) x {n_reps} reps"
                 + (f" ({len(have)} read back from disk)" if have else ""))
        res = None
        bar = self._config_bar()
        bar.status(", ".join(f"{k}={v}" for k, v in label.items()))
        if todo.size:
            res = simulate(algorithm, instances, self.label_key(label), n_reps, max_steps, tasks=todo,
                           on_chunk=self.store.recorder(stored, n_reps),
                           progress=(self.log if not self.quiet else False), **kw)
            if res.layout is not None:
                self.layouts[lab] = dataclasses.asdict(res.layout)
        self.configurations += 1
        bar.update(1)
        shape = (J, n_reps)
        if res is None:
            res = Results(samples=np.zeros(shape, np.int64), steps=np.zeros(shape, np.int64),
                          correct=np.zeros(shape, bool), stopped=np.zeros(shape, bool),
                          answer=np.zeros(shape + (M,), bool), pulls=None, ran=np.zeros(shape, bool),
                          efficiency=float("nan"), wall_time=0.0, compile_time=0.0, lane_steps=0,
                          useful_steps=0, devices=0, lanes=0, chunk_size=0,
                          error_defined=not algorithm.correct_by_construction)
        for row in have:
            j, i = row["instance"], row["rep"]
            res.samples[j, i] = row["samples"]
            res.steps[j, i] = row["steps"]
            res.correct[j, i] = row["correct"]
            res.stopped[j, i] = row["stopped"]
            res.answer[j, i] = False
            res.answer[j, i, answer_items(row["answer"])] = True
            res.ran[j, i] = True
            res.pulls = None
        self.resumed += len(have)
        return res

    def table(self, rows: list[dict], name: str = "summary", title: str | None = None) -> str:
        """Print and save (``<name>.md``) a Markdown table of summary rows."""
        from jaxbandits.tables import markdown_table

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
            replications_read_back=self.resumed, layouts=self.layouts, quick=self.quick, reps=self.reps,
            configurations=self.configurations,
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


def _restart(err: Exception, argv: list[str] | None, started: float | None = None) -> None:
    """Start the same command again in a fresh process after a
    :class:`~jaxbandits.watchdog.StalledComputation` (:func:`jaxbandits.watchdog.restart_in_fresh_process`):
    everything finished is in results.csv and is read back."""
    from jaxbandits.watchdog import restart_in_fresh_process

    if started is not None:  # the restarted process reports the whole command's wall time
        os.environ["JAXBANDITS_RUN_STARTED"] = repr(started)
    restart_in_fresh_process(err, "experiments", list(sys.argv[1:] if argv is None else argv), "experiments")


def main(argv: list[str] | None = None, restart: bool = False) -> int:
    """Run an experiment.  ``restart=True`` (the command line, ``python -m experiments``) lets a
    process that stalls replace itself with a fresh one that resumes from disk; called as a
    function (tests, notebooks) the process is never replaced and the error propagates."""
    parser = argparse.ArgumentParser(prog="python -m experiments",
                                     description="Reproduce the seed papers' tables and figures.")
    parser.add_argument("name", nargs="?", help="experiment to run (omit to list them)")
    # --reps, --seed, --out, --devices are read as text and checked by jaxbandits.validation once
    # the CPU device count is set (importing jaxbandits imports jax, which fixes the device count)
    parser.add_argument("--reps", default=None, help="replications per configuration (an integer >= 1)")
    parser.add_argument("--seed", default="0", help="PRNG seed (an integer >= 0)")
    parser.add_argument("--out", default=None, help="output folder (default results/NAME)")
    parser.add_argument("--quick", action="store_true",
                        help="small version (its time on 2 CPU cores is in the listing)")
    parser.add_argument("--devices", default=None,
                        help="XLA CPU devices to expose (default: 1; try the number of cores)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help="do not use the persistent compilation cache (default: on, in "
                             "~/.cache/jaxbandits/xla or $JAXBANDITS_COMPILATION_CACHE)")
    args = parser.parse_args(argv)
    _set_cpu_devices(int(args.devices) if str(args.devices).isdigit() else None)
    from jaxbandits import validation

    for flag, check in (("reps", validation.cli_positive_int), ("seed", validation.cli_seed),
                        ("devices", validation.cli_positive_int), ("out", validation.cli_out_dir)):
        if getattr(args, flag) is not None:
            try:
                setattr(args, flag, check(getattr(args, flag)))
            except argparse.ArgumentTypeError as e:
                parser.error(f"argument --{flag}: {e}")
    from jaxbandits import compilation_cache, precision

    # the experiments' own JAX code (not only the library's entry points) runs in float64
    precision.enable_globally()

    if not (args.no_compile_cache or compilation_cache.disabled_by_env()):
        args.compile_cache = str(compilation_cache.enable())
    import matplotlib

    matplotlib.use("Agg")
    found = discover()
    if not args.name:
        print(listing(found))
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
    except KeyboardInterrupt:
        # one line instead of a traceback through JAX's internals: what is saved, how to go on
        ctx.close_bar()
        ctx.write_metadata(vars(args), "interrupted")
        saved = ctx.rows_on_disk()
        print(f"\n[{args.name}] interrupted: {saved} replication(s) saved in {ctx.csv_path}; rerun the same "
              "command to resume from there", file=sys.stderr, flush=True)
        return 130
    ctx.close_bar()
    ctx.write_metadata(vars(args), "done")
    ctx.log(f"[{args.name}] done in {time.time() - ctx._started:.1f}s; results in {out}/")
    return 0
