"""One results store for experiments and sweeps: one row per replication in a CSV file, appended
chunk by chunk as a run goes and read back when the run is repeated.

A row is ``label, instance, rep, samples, steps, correct, stopped, answer``.  The label
(:func:`run_label`) is the configuration as JSON, plus the seed of the run and the
:func:`code_version` of the algorithm, so a rerun reads back a replication only when the same
configuration, the same seed and the same code produced it; anything else is computed again.
Replication (j, i) of a configuration depends only on the configuration's key (:func:`key_for`) and
(j, i), so a resumed run gives exactly the table an uninterrupted one would.

Beside the rows, ``<name>.runs.jsonl`` (``results.runs.jsonl``, ``rows.runs.jsonl``) keeps what
the runs that computed them measured, one JSON line per finished chunk and per finished run: seconds,
the engine's wall and compile times, its :class:`~jaxbandits.engine.layout.Layout`.  A rerun that
reads the replications back reports these (:meth:`Store.measured`), not the zero seconds it took.

Used by ``experiments/_runner.py`` (``results.csv``) and :func:`jaxbandits.sweeps.sweep`
(``rows.csv``).
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import os
import time
import warnings
import zlib
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

FIELDS = ("label", "instance", "rep", "samples", "steps", "correct", "stopped", "answer")

_PACKAGE = Path(__file__).resolve().parent


def label_hash(obj: Any) -> int:
    """A 31-bit hash of ``obj`` as sorted JSON (stable across processes and platforms)."""
    return zlib.crc32(json.dumps(obj, sort_keys=True, default=str).encode()) & 0x7FFFFFFF


def key_for(key, config: Any):
    """The PRNG key of a configuration: ``key`` folded with :func:`label_hash` of ``config``
    (independent of the order in which configurations run, and of the code version, so a change
    of code reruns a configuration on the same random numbers)."""
    import jax

    return jax.random.fold_in(key, label_hash(config))


# -- code version -----------------------------------------------------------------------------------
def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "jaxbandits":
        return None
    base = _PACKAGE.joinpath(*parts[1:])
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _imported_files(path: Path) -> set[Path]:
    """Files of the ``jaxbandits`` modules that ``path`` imports (at any depth of the file)."""
    pkg = ".".join(("jaxbandits",) + path.relative_to(_PACKAGE).with_suffix("").parts).rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names]
            # ``from pkg import module`` depends on the module only; ``from pkg import name`` on pkg
            names = subs + ([mod] if any(_module_file(n) is None for n in subs) else [])
        for n in names:
            f = _module_file(n)
            if f is not None:
                out.add(f)
    return out


@functools.lru_cache(maxsize=None)
def _closure(roots: frozenset[Path]) -> frozenset[Path]:
    """Every ``jaxbandits`` source file reachable from ``roots`` by imports."""
    seen, todo = set(), list(roots)
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo.extend(_imported_files(f) - seen)
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def _digest(files: frozenset[Path]) -> int:
    h = 0
    for f in sorted(files):
        h = zlib.crc32(str(f.relative_to(_PACKAGE)).encode(), h)
        h = zlib.crc32(f.read_bytes(), h)
    return h


def source_files(algorithm) -> list[Path]:
    """The source files an algorithm's results depend on (see :func:`code_version`)."""
    engine = _module_file("jaxbandits.engine")
    files = {engine} if engine is not None else set()
    layers = [algorithm]
    while layers:  # a wrapper (e.g. Eliminate, BudgetCapped) and the algorithms it wraps
        layer = layers.pop()
        for cls in type(layer).__mro__:
            f = getattr(inspect.getmodule(cls), "__file__", None)
            if f and Path(f).resolve().is_relative_to(_PACKAGE):
                files.add(Path(f).resolve())
        if dataclasses.is_dataclass(layer):
            layers.extend(v for v in (getattr(layer, f.name) for f in dataclasses.fields(layer))
                          if hasattr(v, "init") and hasattr(v, "step") and hasattr(v, "outcome")
                          or dataclasses.is_dataclass(v) and hasattr(v, "split_dynamic"))  # a rule
    return sorted(_closure(frozenset(files)))


def code_version(algorithm) -> str:
    """A short hash of the configuration (its ``repr``) and of the source code its results depend
    on: the modules defining its class and base classes (and those of a wrapped ``base`` and of
    the rules of a composition), the
    engine, and every ``jaxbandits`` module these import, followed through their imports.  Moving
    a helper to another module, or editing any module on that path, changes it; editing a module
    the run never imports (a plot, another algorithm) does not."""
    h = zlib.crc32(repr(algorithm).encode(), _digest(frozenset(source_files(algorithm))))
    return f"{h:08x}"


def run_label(config: Mapping[str, Any], algorithm, seed: Any) -> str:
    """The label under which a configuration's replications are stored: ``config`` (JSON-able)
    with the seed of the run and the algorithm's :func:`code_version` added."""
    return json.dumps(dict(config, seed=seed, code=code_version(algorithm)), sort_keys=True, default=str)


# -- the store --------------------------------------------------------------------------------------
def _as_bool(v) -> bool:
    return v.strip() in ("True", "true", "1") if isinstance(v, str) else bool(v)


def answer_items(answer: str) -> list[int]:
    """The items of a stored ``answer`` (space-separated indices)."""
    return [int(a) for a in str(answer).split()]


class Store:
    """Replications on disk (``path``, a CSV file) or in memory only (``path=None``).

    ``rows(label)`` gives the replications already there, ``todo(label, J, n)`` the task indices
    ``j * n + i`` still missing, and ``recorder(label, n)`` the ``on_chunk`` callback of
    :func:`jaxbandits.engine.simulate` that appends each finished chunk.  :meth:`record_run` keeps
    what a finished run measured and :meth:`measured` gives it back, summed over every run that
    computed the label's replications (``runs_path``, module docstring).  A file written in another
    layout (an older version of the library) is moved aside to ``<name>.stale.csv``, with a
    warning, and a new one is started.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self._rows: dict[str, dict[tuple[int, int], dict]] = {}
        self.runs_path = None if self.path is None else self.path.with_name(self.path.stem + ".runs.jsonl")
        self._events: dict[str, list[dict]] = {}  # label -> the chunk and run events of runs_path
        self._open: dict[str, dict] = {}  # label -> the run in progress: its id and the time of its last event
        if self.path is None:
            return
        if not self.path.exists():
            if self.runs_path.exists():  # measurements of rows that are gone
                self.runs_path.replace(self.runs_path.with_suffix(".stale.jsonl"))
            return
        import pandas as pd

        df = pd.read_csv(self.path, dtype={"label": str, "answer": str}, keep_default_na=False)
        if tuple(df.columns) != FIELDS:
            stale = self.path.with_suffix(".stale.csv")
            warnings.warn(f"{self.path} has columns {list(df.columns)}, not {list(FIELDS)}: moved to {stale}; "
                          "its replications will be computed again", stacklevel=2)
            self.path.replace(stale)
            if self.runs_path.exists():
                self.runs_path.replace(self.runs_path.with_suffix(".stale.jsonl"))
            return
        for r in df.to_dict("records"):
            self._rows.setdefault(r["label"], {})[(int(r["instance"]), int(r["rep"]))] = dict(
                samples=int(r["samples"]), steps=int(r["steps"]), correct=_as_bool(r["correct"]),
                stopped=_as_bool(r["stopped"]), answer=str(r["answer"]))
        if self.runs_path.exists():
            for line in self.runs_path.read_text().splitlines():
                try:
                    e = json.loads(line)
                except ValueError:  # a line cut short by a killed process: that chunk's seconds only
                    continue
                if isinstance(e, dict) and "label" in e:
                    self._events.setdefault(e["label"], []).append(e)

    def rows(self, label: str) -> dict[tuple[int, int], dict]:
        """(instance, rep) -> dict(samples, steps, correct, stopped, answer) stored under ``label``."""
        return self._rows.get(label, {})

    def todo(self, label: str, n_instances: int, n_reps: int) -> np.ndarray:
        """Task indices ``j * n_reps + i`` of the replications not stored under ``label``."""
        have = self.rows(label)
        return np.asarray([j * n_reps + i for j in range(n_instances) for i in range(n_reps)
                           if (j, i) not in have], np.int64)

    def complete(self, label: str, n_instances: int, n_reps: int) -> bool:
        return self.todo(label, n_instances, n_reps).size == 0

    def records(self, label: str, n_instances: int, n_reps: int) -> list[dict]:
        """The stored replications of a (n_instances x n_reps) configuration as row dicts."""
        return [dict(instance=j, rep=i, **r) for (j, i), r in self.rows(label).items() if j < n_instances and i < n_reps]

    def recorder(self, label: str, n_reps: int, also: Callable[[list[dict]], None] | None = None):
        """An ``on_chunk(task_ids, arrays)`` callback for the engine: stores the chunk's
        replications under ``label`` (appending them to the file) and passes them to ``also``."""
        run = dict(id=f"{os.getpid()}-{time.time_ns()}", last=time.perf_counter())
        self._open[label] = run

        def on_chunk(tids, arrs):
            chunk = []
            for k, t in enumerate(tids):
                j, i = divmod(int(t), n_reps)
                chunk.append(dict(instance=j, rep=i, samples=int(arrs["samples"][k]), steps=int(arrs["steps"][k]),
                                  correct=bool(arrs["correct"][k]), stopped=bool(arrs["stopped"][k]),
                                  answer=" ".join(map(str, np.flatnonzero(arrs["answer"][k])))))
            mine = self._rows.setdefault(label, {})
            for r in chunk:
                mine[(r["instance"], r["rep"])] = {k: v for k, v in r.items() if k not in ("instance", "rep")}
            if self.path is not None and chunk:
                import pandas as pd

                new = not self.path.exists()
                pd.DataFrame([dict(label=label, **r) for r in chunk], columns=list(FIELDS)).to_csv(
                    self.path, mode="a", header=new, index=False)
            if chunk:
                self._event(label, run, kind="chunk", replications=len(chunk))
            if also is not None:
                also(chunk)
        return on_chunk

    def _event(self, label: str, run: dict, **fields) -> None:
        """Keep (and append to ``runs_path``) one event of ``run``: the seconds since its last one."""
        now = time.perf_counter()
        e = dict(label=label, run=run["id"], seconds=now - run["last"], **fields)
        run["last"] = now
        self._events.setdefault(label, []).append(e)
        if self.runs_path is not None:
            with open(self.runs_path, "a") as f:
                f.write(json.dumps(e, default=str) + "\n")

    def record_run(self, label: str, results) -> None:
        """Keep what the run just finished under ``label`` (:meth:`recorder`) measured: the
        :class:`~jaxbandits.engine.Results`' wall and compile times, steps and layout."""
        run = self._open.pop(label, None)
        if run is None:
            return
        layout = getattr(results, "layout", None)
        self._event(label, run, kind="done", wall_time=float(results.wall_time),
                    compile_time=float(results.compile_time), lane_steps=int(results.lane_steps),
                    useful_steps=int(results.useful_steps), devices=int(results.devices), lanes=int(results.lanes),
                    chunk_size=int(results.chunk_size),
                    layout=None if layout is None else dataclasses.asdict(layout))

    def measured(self, label: str) -> dict | None:
        """What the runs that computed ``label``'s replications measured, summed over them (None
        when nothing was recorded, e.g. rows written by an older version of the library):

        ``replications`` computed, ``runs`` (processes) that computed them, ``interrupted`` (runs
        that stopped before their end), ``seconds`` (elapsed, compilation included), ``wall_time``
        and ``compile_time`` (the engine's, of the finished runs; an interrupted run adds its
        seconds up to its last saved chunk to ``wall_time``, compilation included),
        ``lane_steps``, ``useful_steps``, ``efficiency`` and the ``layout``, ``devices``,
        ``lanes`` and ``chunk_size`` of the last finished run.
        """
        events = self._events.get(label)
        if not events:
            return None
        runs: dict[str, list[dict]] = {}
        for e in events:
            runs.setdefault(e.get("run"), []).append(e)
        out = dict(replications=0, runs=len(runs), interrupted=0, seconds=0.0, wall_time=0.0, compile_time=0.0,
                   lane_steps=0, useful_steps=0, layout=None, devices=0, lanes=0, chunk_size=0)
        for evs in runs.values():
            secs = sum(float(e.get("seconds", 0.0)) for e in evs)
            out["seconds"] += secs
            out["replications"] += sum(int(e.get("replications", 0)) for e in evs)
            done = [e for e in evs if e.get("kind") == "done"]
            if not done:
                out["interrupted"] += 1
                out["wall_time"] += secs
                continue
            d = done[-1]
            out["wall_time"] += float(d["wall_time"])
            out["compile_time"] += float(d["compile_time"])
            out["lane_steps"] += int(d["lane_steps"])
            out["useful_steps"] += int(d["useful_steps"])
            out.update({k: d[k] for k in ("layout", "devices", "lanes", "chunk_size")})
        out["efficiency"] = out["useful_steps"] / out["lane_steps"] if out["lane_steps"] else float("nan")
        return out
