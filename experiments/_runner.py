"""The one entry point of every experiment: ``python -m experiments NAME`` (or ``jaxbandits NAME``).

An experiment is a module ``experiments/<name>.py`` with ``NAME``, ``DESCRIPTION`` and
``run(ctx)``; modules are discovered automatically.  A run writes, under ``--out`` (default
``results/<NAME>``):

* ``results.csv``: one row per replication (label, instance, rep, samples, steps, correct,
  stopped, answer; :mod:`jaxbandits.store`), appended chunk by chunk as the run goes, and
  ``results.runs.jsonl`` beside it: the seconds, compile time and layout of the runs that computed
  them; an experiment written on :func:`jaxbandits.sweep` (``ctx.sweep``) keeps its rows in
  ``sweep/rows.csv`` instead;
* ``metadata.json``: library, JAX and Python versions, devices, seed, arguments, the
  experiment's configuration (``ctx.config``) and wall time, enough to regenerate the results;
  what was read back from disk and, in ``earlier_runs``, the statistics of the earlier runs of
  the command in this folder;
* ``<table>.md``: the summary tables (also printed);
* ``<rows>.csv``: per-instance rows of experiments without replications (``ctx.write_rows``);
* ``<plot>.png``: the plots.

Rerunning with the same arguments resumes: replications already in ``results.csv`` (matched by
the configuration's label, the seed, the code version of the algorithm, the instance and the
replication index) are read back, not recomputed; since replication (j, i) depends only on (seed,
label's key, j, i), the merged result is exactly what an uninterrupted run gives.  A configuration
read back keeps the wall time, compile time and layout measured when it was computed
(``results.runs.jsonl``), so the tables of a rerun show the first run's seconds; the run says how
many replications it read back (printed, in ``metadata.json`` and under every table).  After a
change of the code an algorithm's results depend on, its replications are computed again.
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
    # 12 rows (Track-and-Stop D and C, KL-LUCB): 100 runs each at --quick, 1000 at full size
    "garivier_kaufmann_table1": (130, 694, "measured"),
    # 4 rows (EB-TCε and EB-TC on mu1, mu2) and the NumPy reference's runs; EB-TC's runs (3-4e4 pulls at
    # delta = 0.01) dominate; the full 1000 runs per row took 47-61 s of wall time on the 2-core machine
    "jourdan_ebtc_epsilon": (45, 80, "measured"),
    # 12 fixed-confidence and 2 fixed-budget rows beside their NumPy implementations; most of the
    # time is the NumPy Track-and-Stops (w* solved at every step for every replication): --quick
    # 347 s wall with Track-and-Stop's 200 runs of ours read back, full size 925 s wall
    "karmed_baselines": (360, 925, "measured"),
    # quick: T = 1010 only, 1000 runs of each algorithm; full: 20,000 runs x 6 budgets x 2 algorithms
    "peace_soare": (80, 7200, "estimate"),
    # quick: 200 JAX runs of each design, 10 / 40 NumPy reference runs (mixed / rho); full: 10x that
    # (189 s measured with the quick run's programs in the compilation cache, plus their compile)
    "peace_fixed_confidence": (36, 240, "estimate"),
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
    # --quick: all 12 rows (preset, 2 runs each; 30-100k samples per run at d = 20): 12 compiled programs
    "tirinzoni_degenne_table1": (325, 19000, "lower estimate"),
}


def reference_module(name: str):
    """The module ``benchmarks/<name>.py`` of the repository (an independent implementation an
    experiment runs beside the library's), loaded from its file: ``benchmarks`` is not a package
    the library installs."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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


#: the columns of a sweep's table that vary within a configuration (the rest name it)
_PER_REPLICATION = frozenset({"instance", "rep", "samples", "steps", "correct", "stopped", "answer", "noise",
                              "T_star", "lower_bound"})


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
        self.row_files: list[Path] = []  # the files that hold this run's rows (results.csv, a sweep's rows.csv)
        # the statistics of the earlier runs in this folder, kept when metadata.json is rewritten
        self.earlier_runs = _earlier_runs(self.out / "metadata.json", name)
        self._t0 = time.perf_counter()
        # wall time of the whole command, across restarts in fresh processes (_restart)
        self._started = time.time() if started is None else float(started)
        self.resumed = 0  # replications read back from disk
        self.computed = 0  # replications computed by this run
        self.read_back_configurations = 0  # configurations with at least one replication read back
        self.read_back_seconds = 0.0  # recorded wall + compile seconds of the configurations read back in full
        self.layouts: dict[str, dict] = {}  # label -> the engine's Layout (device-aware choices)
        self.measured: dict[str, dict] = {}  # label -> what the runs that computed it measured (Store.measured)
        self.configurations = 0  # configurations run so far (ctx.simulate calls, ctx.sweep's configurations)
        self._bar = None  # the experiment's progress bar over configurations (jaxbandits.progress)

    # -- progress ------------------------------------------------------------------------------
    def _config_bar(self):
        """The experiment's bar over configurations (shown on a terminal once the run lasts a few
        seconds, not with --quiet), opened when the experiment starts: its total is the count of the
        last finished run of the same command when there is one (metadata.json), else unknown.  The
        bars of a configuration's runs and of a sweep nest under it."""
        if self._bar is None:
            from jaxbandits import progress

            total = None
            try:
                old = json.loads((self.out / "metadata.json").read_text())
                if old.get("status") == "done" and old.get("quick") == self.quick and old.get("reps") == self.reps:
                    total = int(old.get("configurations")) or None
            except (OSError, ValueError, TypeError):
                pass
            self._bar = progress.Bar(total, desc=self.name, unit="config", enabled=progress.wanted(None) and not self.quiet,
                                     status="preparing")
        return self._bar

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.status("")  # the bar that stays says only what was done
            self._bar.close()
            self._bar = None

    def rows_files(self) -> list[Path]:
        """The files that hold this run's replications: ``results.csv`` and the ``rows.csv`` of
        every sweep it ran (``ctx.sweep``); those that exist, else where they will be."""
        files = list(dict.fromkeys([*([self.csv_path] if self.csv_path.exists() or not self.row_files else []),
                                    *self.row_files]))
        return [f for f in files if f.exists()] or files

    def rows_on_disk(self) -> int:
        """Replications in the files that hold this run's rows (what a rerun reads back)."""
        n = 0
        for path in self.rows_files():
            if path.exists():
                with open(path, newline="") as f:
                    n += max(0, sum(1 for _ in f) - 1)
        return n

    def read_back_note(self) -> str:
        """One line saying what this run read back from disk so far ("" when nothing)."""
        if not self.resumed:
            return ""
        total = self.resumed + self.computed
        secs = (f"; the configurations read back in full took {self.read_back_seconds:.1f} s when computed"
                if self.read_back_seconds else "")
        return (f"Read back from {', '.join(str(f) for f in self.rows_files())}: {self.resumed} of {total} "
                f"replications, computed by an earlier run of this command (same seed and code); their times "
                f"are those measured then{secs}.")

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
                           # on a terminal a bar under the experiment's, else a line per chunk
                           progress=False if self.quiet else True if bar.enabled else self.log, **kw)
            self.store.record_run(stored, res)
            if res.layout is not None:
                self.layouts[lab] = dataclasses.asdict(res.layout)
        self.computed += int(todo.size)
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
        if have:
            self.read_back_configurations += 1
            res = self._with_measured(res, stored, lab, complete=not todo.size)
        return res

    def _with_measured(self, res, stored: str, lab: str, complete: bool):
        """``res`` (partly or wholly read back) with the times, steps and layout of every run that
        computed its replications (:meth:`jaxbandits.store.Store.measured`), this one included;
        NaN seconds when nothing was recorded (rows written by an older version of the library)."""
        import dataclasses

        from jaxbandits.engine.layout import Layout

        m = self.store.measured(stored)
        if m is None:
            return dataclasses.replace(res, wall_time=float("nan"), compile_time=float("nan"))
        self.measured[lab] = m
        if m["layout"] is not None:
            self.layouts[lab] = m["layout"]
        if complete:
            self.read_back_seconds += m["wall_time"] + m["compile_time"]
        layout = Layout(**m["layout"]) if m["layout"] is not None else res.layout
        return dataclasses.replace(res, wall_time=m["wall_time"], compile_time=m["compile_time"],
                                   lane_steps=m["lane_steps"], useful_steps=m["useful_steps"],
                                   efficiency=m["efficiency"], devices=m["devices"], lanes=m["lanes"],
                                   chunk_size=m["chunk_size"], layout=layout)

    def sweep(self, algorithms, generators, *, out=None, **kw):
        """:func:`jaxbandits.sweep` with its rows in ``out`` (default ``<--out>/sweep``): what it
        read back is counted in this run's metadata and said in its messages, and Ctrl-C names
        its ``rows.csv``; its bar (on a terminal) is drawn under the experiment's, whose count of
        configurations includes the sweep's."""
        from jaxbandits.sweeps import sweep

        folder = Path(out) if out is not None else self.out / "sweep"
        if folder / "rows.csv" not in self.row_files:
            self.row_files.append(folder / "rows.csv")
        # the sweep's bar (and its runs') under the experiment's, whatever the caller asked for
        bar = self._config_bar()
        kw["progress"] = bar.enabled
        bar.status(f"sweep of {', '.join(map(str, algorithms))}")
        df = sweep(algorithms, generators, out=folder, **kw)
        done_configs = len(df[[c for c in df.columns if c not in _PER_REPLICATION]].drop_duplicates()) if len(df) else 0
        self.configurations += done_configs
        bar.update(done_configs, status="")
        a = df.attrs
        back, done = int(a.get("replications_read_back", 0)), int(a.get("replications_computed", 0))
        self.resumed += back
        self.computed += done
        self.read_back_configurations += int(a.get("configurations_read_back", 0))
        self.read_back_seconds += float(a.get("seconds_read_back", 0.0))
        for label, m in a.get("measured", {}).items():
            self.measured[label] = m
            if m.get("layout") is not None:
                self.layouts[label] = m["layout"]
        if back:
            self.log(f"[{self.name}] {back} of {back + done} replication(s) read back from {folder / 'rows.csv'} "
                     f"(computed by an earlier run; {float(a.get('seconds_read_back', 0.0)):.1f} s then)")
        return df

    def table(self, rows: list[dict], name: str = "summary", title: str | None = None,
              notes: str | None = None) -> str:
        """Print and save (``<name>.md``) a Markdown table of summary rows, followed by ``notes``
        (e.g. :func:`jaxbandits.tables.paper_notes`: the rows that disagree with their paper)."""
        from jaxbandits.tables import markdown_table

        text = (f"### {title}\n\n" if title else "") + markdown_table(rows) + (f"\n{notes}" if notes else "")
        # the file says what was read back; the printed output says it once, at the end of the run
        (self.out / f"{name}.md").write_text(text + (f"\n{self.read_back_note()}\n" if self.resumed else ""))
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
            replications_read_back=self.resumed, replications_computed=self.computed,
            configurations_read_back=self.read_back_configurations, seconds_read_back=self.read_back_seconds,
            rows_files=[str(f) for f in self.rows_files()],
            layouts=self.layouts, measured=self.measured, quick=self.quick, reps=self.reps,
            configurations=self.configurations,
            engine_programs_compiled=_programs_compiled(),
            engine_compile_seconds=_compile_seconds(), compile_cache=_cache_counts(),
            peak_memory_mappings=_peak_mappings(), programs_released=_releases(),
            command=" ".join(sys.argv), earlier_runs=self.earlier_runs,
        )
        (self.out / "metadata.json").write_text(json.dumps(meta, indent=2, default=str))


#: what metadata.json keeps of each earlier run in its folder (``earlier_runs``)
EARLIER_KEYS = ("status", "wall_time", "replications_read_back", "replications_computed", "configurations",
                "engine_programs_compiled", "engine_compile_seconds", "compile_cache", "devices", "layouts",
                "command", "quick", "reps", "seed")


def _earlier_runs(path: Path, name: str, keep: int = 20) -> list[dict]:
    """The earlier runs recorded in ``path`` (an experiment's metadata.json): its own
    ``earlier_runs`` plus the run it describes, the last ``keep``; a rerun that reads everything
    back thus keeps the compile statistics and layouts of the run that computed it."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(old, dict) or old.get("experiment") != name:
        return []
    runs = [r for r in old.get("earlier_runs", []) if isinstance(r, dict)]
    return (runs + [{k: old.get(k) for k in EARLIER_KEYS if k in old}])[-keep:]


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


class OneLineErrors(argparse.ArgumentParser):
    """argparse with each command-line error on one line, without the usage block:
    ``PROG: error: argument --x: ... (PROG --help for the usage)``, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help for the usage)\n")


def _cores() -> int:
    """The cores this process may run on, before jaxbandits is imported (importing it starts JAX,
    which fixes the CPU device count); :func:`jaxbandits.validation.check_cpu_device_count` then
    checks ``--devices`` against the same count and says why."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def main(argv: list[str] | None = None, restart: bool = False) -> int:
    """Run an experiment.  ``restart=True`` (the command line, ``python -m experiments``) lets a
    process that stalls replace itself with a fresh one that resumes from disk; called as a
    function (tests, notebooks) the process is never replaced and the error propagates."""
    parser = OneLineErrors(prog="python -m experiments",
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
                        help="XLA CPU devices to expose (default: 1; at most the cores this process may use, "
                             "unless --oversubscribe; try the number of cores)")
    parser.add_argument("--oversubscribe", action="store_true",
                        help="allow --devices beyond the cores: every device runs its own loop on its own "
                             "thread and gets its own compiled program, so the extra devices only share the "
                             "cores and multiply the compile time (64 devices on 2 cores: 270 s for a "
                             "configuration that takes 7 s on one device)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help="do not use the persistent compilation cache (default: on, in "
                             "~/.cache/jaxbandits/xla or $JAXBANDITS_COMPILATION_CACHE)")
    args = parser.parse_args(argv)
    n_devices = int(args.devices) if str(args.devices).isdigit() else None
    # more devices than cores only with --oversubscribe: checked (below, with the reason) before
    # anything is compiled; a refused count is never set
    if n_devices and (args.oversubscribe or n_devices <= _cores()):
        _set_cpu_devices(n_devices)
    from jaxbandits import validation

    for flag, check in (("reps", validation.cli_positive_int), ("seed", validation.cli_seed),
                        ("devices", validation.cli_positive_int), ("out", validation.cli_out_dir)):
        if getattr(args, flag) is not None:
            try:
                setattr(args, flag, check(getattr(args, flag)))
            except argparse.ArgumentTypeError as e:
                parser.error(f"argument --{flag}: {e}")
    if args.devices is not None and not args.oversubscribe:
        try:
            validation.check_cpu_device_count(args.devices, "--devices",
                                              override="pass --oversubscribe to run that many anyway")
        except ValueError as e:
            parser.error(str(e))
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
        print(f"python -m experiments: error: argument name: unknown experiment {args.name!r}; available: "
              f"{', '.join(found)} (python -m experiments lists them with their times)", file=sys.stderr)
        return 2
    mod = importlib.import_module(f"experiments.{found[args.name]}")
    out = Path(args.out) if args.out else Path("results") / args.name
    ctx = Context(args.name, args.reps, args.seed, out, args.quick, args.quiet,
                  started=os.environ.pop("JAXBANDITS_RUN_STARTED", None))
    ctx.write_metadata(vars(args), "running")
    from jaxbandits.watchdog import StalledComputation

    ctx._config_bar()
    try:
        mod.run(ctx)
    except StalledComputation as e:
        ctx.close_bar()
        if not restart:
            raise
        _restart(e, argv, ctx._started)
    except KeyboardInterrupt:
        # one line instead of a traceback through JAX's internals: what is saved, how to go on
        ctx.close_bar()
        ctx.write_metadata(vars(args), "interrupted")
        saved = ctx.rows_on_disk()
        where = " and ".join(str(f) for f in ctx.rows_files())
        print(f"\n[{args.name}] interrupted: {saved} replication(s) saved in {where}; rerun the same "
              "command to resume from there", file=sys.stderr, flush=True)
        return 130
    except BaseException:
        ctx.close_bar()  # before the traceback: no bar left drawing under it
        raise
    ctx.close_bar()
    ctx.write_metadata(vars(args), "done")
    ctx.log(f"[{args.name}] done in {time.time() - ctx._started:.1f}s; results in {out}/")
    if ctx.resumed:
        ctx.log(f"[{args.name}] {ctx.read_back_note()}")
    return 0
