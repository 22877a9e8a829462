"""Every algorithm of the library on its seed instance, on one accelerator and on the CPU, in
commands short enough for a 30-minute lease of a GPU.

One row per (algorithm, platform, lanes): replications per second with everything else at its
default (``simulate`` chooses chunks, steps per block and solve batching; compilation excluded),
replication-steps per second, lane efficiency (useful replication-steps / lane-steps), the row's
peak device memory (``memory_stats()["peak_bytes_in_use"]``: every row runs in its own process, so
it is that row's peak; the CPU backend reports none), the compiled program's bytes (XLA's memory
analysis), the compile time and the layout, with the versions, XLA flags and commit.

How a lease is used: every row is a subprocess with a time budget (``--row-budget``); it runs
replications chunk by chunk until at least 16 x lanes replications are done or its budget is
spent, and writes ``OUT/<row>.json`` when it finishes.  ``run`` skips the rows whose JSON exists
and stops starting rows after ``--total`` seconds, so the same command, repeated, finishes the
table in pieces of at most 9 minutes; one failed row (an error, an out-of-memory, a timeout) is
written as such and never loses the others.  On the accelerator each algorithm runs at the
default lanes and at each of ``--lanes`` (a lane sweep); the CPU column is a separate command,
with few replications and its own budget.

Instances: the seed instance each algorithm was written for (seed 000 many-arms for LT&S, seed 001
Soare d = 5 for the elimination family, FWS, Top Two and LinGame, seed 003 top-m instances for the
GIFA family, seed 002 fixed-budget instances for GSE / OD-LinBAI / BayesGap / Peace / LinUCB /
UCB-GLM, a sphere-uniform instance for the uniform GLR and elimination, seed 000 Sec 4.2's rotated
basis for SphereBAI).

Usage, on a machine with one GPU (each command at most 9 minutes; repeat it until it says
"all rows done")::

    python benchmarks/devices.py run --out devices_h100 --total 500
    python benchmarks/devices.py run --out devices_h100 --platform cpu --total 500
    python benchmarks/devices.py table devices_h100

``--only NAME ...`` restricts the rows, ``--lanes`` with no value drops the lane sweep (default
lanes only), ``--quick`` shrinks the instances (LT&S K = 100) for a smoke test on a CPU.

The study: 10^6 replications of each seed paper's headline workload (``STUDY``: RAGE, the XY
family, ALBA, Oracle, LinGapE and the GIFA family, SphereBAI, the fixed-budget rows, LT&S at
K = 1000), end to end (compile included), one process a row, each within its budget (a row whose
10^6 replications would outlast it runs the waves that fit, and its end to end time is
extrapolated at the rate measured); prints the study table (workload, lanes, replications/s,
lane efficiency, end to end s, compile s, note: the target met or missed)::

    python benchmarks/devices.py study --out study_h100
    python benchmarks/devices.py study --out /tmp/s --quick --platform cpu --only SphereBAI   # a smoke test

In a lease of any length, one command does the rows in the order that matters (the study rows
with targets first, each with its budget, then every other row at its default lanes, then the
lane sweep), writes ``table.md`` (the study table, then the rows') and ``rows.json`` (every row
in one file) in ``--out``, names the rows left, and is repeated until it says "all rows done".
A 15-minute lease (one to two minutes of start, commands of at most 9 minutes) holds every study
row in two commands: the first with the default ``--total`` (515 s), the second with the time
the lease has left (``lease --plan`` prints both commands' rows and seconds)::

    python benchmarks/devices.py lease --out devices_h100
    python benchmarks/devices.py lease --out devices_h100 --total 250

"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import time

_T_PROCESS = time.perf_counter()


@dataclasses.dataclass
class Workload:
    """A row's algorithm and instance.  ``source`` is the instance, or a function of no arguments
    that builds it (:class:`Lazy`): a row's process builds only its own instance (on an
    accelerator every eager operation of a generator compiles a kernel of its own; building every
    workload's instance cost a row's process about 20 s on the H200)."""

    name: str
    algorithm: object
    source: object
    reps: int
    quick_reps: int
    max_steps: int = 10**7

    @property
    def instance(self):
        if isinstance(self.source, Lazy):
            self.source = self.source.build()
        return self.source


class Lazy:
    """An instance built on first use, once, however many workloads share it."""

    def __init__(self, build):
        self._build, self._value = build, None

    def build(self):
        if self._value is None:
            self._value = self._build()
        return self._value


def workloads(quick: bool) -> list[Workload]:
    import jax
    import jax.numpy as jnp

    from jaxbandits import algorithms as A
    from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
    from jaxbandits.instances import seeds

    key = lambda: jax.random.key(0)  # noqa: E731
    soare = Lazy(lambda: seeds.soare_benchmark(5))
    K_lts = 100 if quick else 1000
    many = Lazy(lambda: seeds.many_arms_code(key(), K_lts))
    topm = Lazy(seeds.topm_classic)
    top1 = Lazy(seeds.topm_hard_top1)  # topm_classic ties its two best items: a top-1 run never stops
    static = Lazy(lambda: seeds.static_basis(0.3, d=16, noise=math.sqrt(10.0)))
    sphere = Lazy(lambda: seeds.sphere_calibrated(key(), 20, 5))
    logistic = Lazy(lambda: seeds.logistic_gse(key(), 8, 5))  # seed 002 Sec 8.4
    # seed 000 Sec 4.2: an orthonormal basis of R^3 in a random rotation, 50 items on the sphere
    basis = Lazy(lambda: sphere_instance(key(), jnp.array([0.6, 0.3, 0.1]), num_items=50, random_basis=True))
    return [
        Workload(f"LT&S no averaging, many-arms K={K_lts}", A.LazyTrackAndStop(averaging=False), many, 1000, 20),
        Workload("RAGE, Soare d=5", A.RAGE(), soare, 1000, 200),
        Workload("XY-static, Soare d=5", A.XYStatic(), soare, 1000, 100),
        Workload("XY-oracle, Soare d=5", A.XYOracle(), soare, 1000, 100),
        Workload("XY-adaptive, Soare d=5", A.XYAdaptive(), soare, 500, 8),
        Workload("ALBA, Soare d=5", A.ALBA(), soare, 1000, 50),
        Workload("Oracle, Soare d=5", A.Oracle(), soare, 1000, 100),
        Workload("uniform + GLR, sphere K=20 d=5", A.UniformGLR(), sphere, 1000, 20),
        Workload("uniform + GLR + elimination, sphere K=20 d=5", A.Eliminate(A.UniformGLR()), sphere, 1000, 20),
        Workload("FWS, Soare d=5", A.FWS(), soare, 1000, 4),
        Workload("Top Two, Soare d=5", A.TopTwo(), soare, 1000, 4),
        Workload("LinGame, Soare d=5", A.LinGame(), soare, 1000, 4),
        Workload("SphereBAI, sphere basis d=3", A.SphereBAI(epsilon=0.3, delta=0.3), basis, 1000, 100),
        Workload(f"LinGapE greedy, many-arms K={K_lts}", A.LinGapE(), many, 1000, 50),
        Workload("LinGapE (top-1), hard top-1 K=3", A.LinGapE(), top1, 10_000, 20),
        Workload("m-LinGapE, top-m K=4 m=2", A.MLinGapE(2), topm, 100_000, 2000),
        Workload("LinGIFA, top-m K=4 m=2", A.LinGIFA(2), topm, 100_000, 2000),
        Workload("LUCB, top-m K=4 m=2", A.LUCB(2), topm, 100_000, 2000),
        Workload("UGapE, top-m K=4 m=2", A.UGapE(2), topm, 100_000, 2000),
        Workload("GSE, static d=16 B=320", A.GSE(budget=320), static, 10_000, 500),
        Workload("OD-LinBAI, static d=16 B=320", A.ODLinBAI(budget=320), static, 10_000, 500),
        Workload("BayesGap, static d=16 B=320", A.BayesGap(budget=320), static, 10_000, 200),
        Workload("Peace, static d=16 B=320", A.Peace(budget=320), static, 10_000, 200),
        Workload("LinUCB, static d=16 B=320", A.LinUCB(budget=320), static, 10_000, 500),
        Workload("UCB-GLM, logistic K=8 d=5 B=400", A.UCBGLM(budget=400), logistic, 10_000, 100),
        Workload("LinGapE capped at B=320, static d=16", A.BudgetCapped(A.LinGapE(), 320), static, 10_000, 200),
    ]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def peak_bytes(device) -> int | None:
    try:
        st = device.memory_stats() or {}
    except Exception:  # backends without memory statistics
        return None
    return st.get("peak_bytes_in_use")


def environment() -> dict:
    """Versions, flags, commit and device of this process."""
    import jax
    import jaxlib

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except Exception:
        commit = None
    plugins = {}
    for mod in ("jax_cuda12_plugin", "jax_cuda13_plugin"):
        try:
            plugins[mod] = __import__(mod).__version__
        except Exception:
            pass
    dev = jax.devices()[0]
    return dict(jax=jax.__version__, jaxlib=jaxlib.__version__, plugins=plugins, python=sys.version.split()[0],
                xla_flags=os.environ.get("XLA_FLAGS", ""), commit=commit, device_kind=dev.device_kind,
                platform=dev.platform, device_count=len(jax.devices()))


def measure_row(w: Workload, platform: str, lanes: int | None, budget: float, min_reps: int, save=None) -> dict:
    """Replications of ``w`` chunk by chunk (one program: the layout is fixed by the first call)
    until ``min_reps`` are done or ``budget`` seconds are spent; ``save(row)`` receives the row so
    far after every chunk (a row cut short by its time limit keeps what it measured).

    The first call runs one wave, a task on every lane: it compiles (timed apart) and measures at
    once, where a lone first replication would hold every lane for a whole replication's steps
    and measure nothing (22,600 steps for XY-adaptive on Soare d = 5).  Each later call runs as
    many whole waves as the rate so far says fit in the budget left, and none when not one does.
    """
    import jax

    from jaxbandits.engine import layout as policy
    from jaxbandits.engine import simulate
    from jaxbandits.instances.base import as_batch

    devices = jax.devices(platform)[:1]
    n_reps = max(min_reps, 1)
    if lanes is None:  # the default for the whole row, as simulate would choose it for n_reps tasks
        with jaxbandits_precision():
            inst = w.algorithm.prepare(as_batch(w.instance))
            lanes = policy.choose_lanes(platform if platform == "cpu" else devices[0].platform,
                                        policy.lane_bytes(w.algorithm, inst, devices[0].platform),
                                        policy.free_memory(devices[0]),
                                        inst, tasks=n_reps)
    if save is not None:  # where a row cut by its time limit was: see _ended_early
        marker = dict(phase="compile and first wave", lanes_first_wave=lanes,
                      start_s=time.perf_counter() - _T_PROCESS, compiled_s=0.0)
        save(marker)

        def compiled(event, seconds, **_):  # XLA's compiles, as they end (until the first chunk's row)
            if event == "/jax/core/compile/backend_compile_duration" and "phase" in marker:
                marker["compiled_s"] += seconds
                save(marker)

        jax.monitoring.register_event_duration_secs_listener(compiled)
    t_start = time.perf_counter()
    done = wall = useful = lane_steps = compile_s = 0
    samples, stopped, layout, row = [], [], None, None
    start = 0
    while start < n_reps:
        if layout is None:
            count = min(n_reps, lanes)
        else:
            wave = min(lanes, n_reps - start)
            fits = done / wall * (budget - (time.perf_counter() - t_start)) if wall else float("inf")
            if fits < wave:
                break
            per_call = layout.devices * layout.chunk_per_device
            count = min(n_reps - start, per_call, max(wave, int(fits) // lanes * lanes))
        tasks = list(range(start, start + count))
        r = simulate(w.algorithm, w.instance, jax.random.key(1), n_reps, w.max_steps, record_pulls=False,
                     devices=devices, lanes=lanes, tasks=tasks)
        if layout is None:
            layout, lanes = r.layout, r.lanes
        compile_s += r.compile_time
        wall += r.wall_time
        useful += r.useful_steps
        lane_steps += r.lane_steps
        done += len(tasks)
        samples += r.samples[r.ran].tolist()
        stopped += r.stopped[r.ran].tolist()
        start += len(tasks)
        row = _summary(platform, layout, done, wall, useful, lane_steps, compile_s, devices, samples, stopped,
                       time.perf_counter() - t_start > budget)
        if save is not None:
            marker.clear()
            save(row)
    return row


def _summary(platform, layout, done, wall, useful, lane_steps, compile_s, devices, samples, stopped, cut):
    return dict(platform=platform, lanes=layout.lanes, reps=int(done), reps_per_s=done / wall if wall else None,
                rep_steps_per_s=useful / wall if wall else None, efficiency=useful / lane_steps if lane_steps else None,
                compile_s=compile_s, wall_s=wall, peak_bytes=peak_bytes(devices[0]),
                program_bytes=layout.program_bytes, layout=dataclasses.asdict(layout),
                mean_samples=sum(samples) / len(samples), stopped=sum(stopped) / len(stopped),
                budget_spent=cut)


def jaxbandits_precision():
    from jaxbandits import precision

    return precision.context("float64")


def _mib(b):
    return "n/a" if b is None else f"{b / 2**20:.1f}"


def table(rows: list[dict]) -> str:
    head = ("| algorithm, instance | platform | lanes | reps | reps/s | rep-steps/s | lane eff. | peak MiB "
            "| program MiB | compile s |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in sorted(rows, key=lambda r: (r["name"], r["platform"], r.get("lanes_asked") or 0)):
        if "error" in r:
            out.append(f"| {r['name']} | {r['platform']} | {r.get('lanes_asked') or 'default'} | failed: "
                       f"{r['error'][:100]} |" + " |" * 6)
            continue
        out.append(f"| {r['name']} | {r['platform']} | {r['lanes']:,} | {r['reps']:,} | {r['reps_per_s']:,.1f} "
                   f"| {r['rep_steps_per_s']:,.0f} | {r['efficiency']:.2f} | {_mib(r['peak_bytes'])} "
                   f"| {_mib(r['program_bytes'])} | {r['compile_s']:.1f} |")
    return "\n".join(out)


def _row_path(out: str, name: str, platform: str, lanes: int | None) -> str:
    return os.path.join(out, f"{slug(name)}__{platform}__{lanes or 'default'}.json")


def row_main(args) -> int:
    """One row in this process: writes its JSON (or the error) and exits."""
    import jaxbandits.precision

    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    w = next(w for w in workloads(args.quick) if w.name == args.name)
    path = _row_path(args.out, w.name, args.platform, args.lanes)
    row = dict(name=w.name, platform=args.platform, lanes_asked=args.lanes, env=environment())

    def save(part, complete=False):
        with open(path + ".tmp", "w") as f:
            json.dump(dict(row, **part, complete=complete), f, indent=1)
        os.replace(path + ".tmp", path)

    min_reps = w.quick_reps if args.platform == "cpu" else 16 * (args.lanes or 4096)
    try:
        save(measure_row(w, args.platform, args.lanes, args.budget, min_reps, save=save), complete=True)
    except Exception as e:  # written, so that a rerun does not repeat a failing row
        save(dict(error=f"{type(e).__name__}: {str(e)[:500]}"))
    return 0


def _ended_early(path: str, row: dict, why: str) -> None:
    """The row of a process that ended before its row did (its time limit, a crash, an
    out-of-memory kill): what it measured (whole chunks) is kept; a row stopped before its first
    chunk ended is an error that says where its time went (the process's start: imports and the
    instance; then the compile and the first wave, on how many lanes)."""
    prior = None
    if os.path.exists(path):
        with open(path) as f:
            prior = json.load(f)
    if prior is not None and ("reps" in prior or "error" in prior):
        return
    if prior is None:
        where = "before its row began (imports, the instance)"
    else:
        row = dict(prior, **row)
        where = (f"{prior['start_s']:.1f} s to start the process, then compiling ({prior.get('compiled_s', 0.0):.1f} s "
                 f"of compiles ended) and the first wave of {prior['lanes_first_wave']:,} lanes")
    with open(path, "w") as f:
        json.dump(dict(row, error=f"{why}: {where}"), f)


def _study_path(out: str, name: str, platform: str) -> str:
    return os.path.join(out, f"{slug(name)}__{platform}__study.json")


def study_row_main(args) -> int:
    """One study row in this process: ``--reps`` replications (10^6) of the workload at the lanes
    ``simulate`` chooses for them, compile included, until done or ``--budget`` seconds (counted
    from the first call, compile included) are spent; writes its JSON after every chunk, so a row
    cut by its process's time limit keeps what it measured."""
    import jaxbandits.precision

    jaxbandits.precision.enable_globally()
    w = next(w for w in workloads(args.quick) if w.name == args.name)
    path = _study_path(args.out, w.name, args.platform)
    row = dict(name=w.name, platform=args.platform, kind="study", reps_asked=args.reps, env=environment())
    t0 = time.perf_counter()

    def save(part, complete=False):
        e2e = time.perf_counter() - t0
        part = dict(part, e2e_s=e2e, process_s=time.perf_counter() - _T_PROCESS)
        if part.get("reps_per_s") and part["reps"] < args.reps:  # the waves left at the rate measured
            part["e2e_extrapolated_s"] = e2e + (args.reps - part["reps"]) / part["reps_per_s"]
        with open(path + ".tmp", "w") as f:
            json.dump(dict(row, **part, complete=complete), f, indent=1)
        os.replace(path + ".tmp", path)

    try:
        save(measure_row(w, args.platform, args.lanes, args.budget, args.reps, save=save), complete=True)
    except Exception as e:  # written, so that a rerun does not repeat a failing row
        save(dict(error=f"{type(e).__name__}: {str(e)[:500]}"))
    return 0


def study_note(r: dict, target: StudyRow | None) -> str:
    """The study table's note of a row: the target met or missed, an extrapolation, an error."""
    if "error" in r:
        return "failed: " + r["error"][:100]
    notes = []
    e2e = r.get("e2e_extrapolated_s") or r["e2e_s"]
    if r["reps"] < r.get("reps_asked", r["reps"]):
        notes.append(f"{r['reps']:,} of {r['reps_asked']:,} reps in the row's budget; end to end "
                     f"extrapolated at the rate measured")
    if target is not None and r["platform"] != "cpu":
        if target.target_s is not None:
            notes.append(f"target < {target.target_s:.0f} s: {'met' if e2e < target.target_s else 'missed'}")
        if target.target_rate is not None:
            notes.append(f"target >= {target.target_rate:,.0f} reps/s: "
                         f"{'met' if (r['reps_per_s'] or 0) >= target.target_rate else 'missed'}")
    return "; ".join(notes)


def study_table(rows: list[dict], quick: bool = False) -> str:
    """The study table: workload, lanes, replications/s, lane efficiency, end to end s (compile
    included; extrapolated where the row's budget cut it, marked ``~``), compile s, note."""
    targets = {name: row for row, name in study_rows(quick)}
    head = "| workload | platform | lanes | reps | replications/s | lane efficiency | end to end s | compile s | note |"
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    order = {name: i for i, name in enumerate(targets)}
    for r in sorted(rows, key=lambda r: (order.get(r["name"], len(order)), r["name"], r["platform"])):
        note = study_note(r, targets.get(r["name"]))
        if "error" in r:
            out.append(f"| {r['name']} | {r['platform']} |" + " |" * 6 + f" {note} |")
            continue
        e2e = r.get("e2e_extrapolated_s")
        e2e = f"~{e2e:,.1f}" if e2e else f"{r['e2e_s']:,.1f}"
        out.append(f"| {r['name']} | {r['platform']} | {r['lanes']:,} | {r['reps']:,} | {r['reps_per_s']:,.0f} "
                   f"| {r['efficiency']:.2f} | {e2e} | {r['compile_s']:.1f} | {note} |")
    return "\n".join(out)


#: replications of a study row (``study``): a million, compile included
STUDY_REPS = 10**6
#: replications of a study row with ``--quick`` (a smoke test on a CPU)
STUDY_QUICK_REPS = 64


@dataclasses.dataclass(frozen=True)
class StudyRow:
    """A row of the study: a workload of :func:`workloads` (its name, or the start of it: the
    K of LT&S and greedy LinGapE follows ``--quick``), its target on one H100 (``target_s``: end
    to end seconds for 10^6 replications, compile included; ``target_rate``: replications/s) and
    the seconds a lease reserves for it on the device (``budget``: the process's start, compile
    and run; a row that would need more runs the waves that fit and its end to end time is
    extrapolated from them; ``lanes``, where set, caps the lanes so that the first wave, a task on
    every lane, fits the budget)."""

    name: str
    budget: float
    target_s: float | None = 60.0
    target_rate: float | None = None
    lanes: int | None = None


#: The study: each seed paper's headline workload, 10^6 replications end to end.  Budgets from the
#: H200 (jax 0.11.2, 2026-11-28, docs/measurements/2026-11-28-h200-study.md): (1.1 x the row's
#: measured end to end seconds + 8 s to start its process) / 0.85 (``_run_rows`` gives the row
#: 0.85 of it less 8 s); where the row's budget cut it (RAGE, LUCB, SphereBAI), its end to end
#: seconds extrapolated at the rate measured.  GSE and OD-LinBAI have not finished a first wave of
#: 262,144 lanes within 45 s on the H200 (a process start of about 20 s included): 55 s each,
#: and the row says where its time went.  Peace, BayesGap, LinUCB and LT&S were not reached there:
#: ``gpu_model.py --study``'s predictions (docs/measurements/2026-11-28-study-predictions.md).
#: They add up to what a 15-minute lease holds (:func:`lease_plan`).
STUDY = (
    StudyRow("RAGE, Soare d=5", 45.0),
    StudyRow("XY-static, Soare d=5", 43.0),
    StudyRow("XY-oracle, Soare d=5", 45.0),
    StudyRow("Oracle, Soare d=5", 52.0),
    StudyRow("ALBA, Soare d=5", 51.0),
    StudyRow("LinGapE (top-1), hard top-1 K=3", 27.0),
    StudyRow("m-LinGapE, top-m K=4 m=2", 27.0),
    StudyRow("LinGIFA, top-m K=4 m=2", 29.0),
    StudyRow("LUCB, top-m K=4 m=2", 40.0),
    StudyRow("UGapE, top-m K=4 m=2", 36.0),
    StudyRow("SphereBAI, sphere basis d=3", 55.0),
    StudyRow("GSE, static d=16 B=320", 55.0),
    StudyRow("OD-LinBAI, static d=16 B=320", 55.0),
    # 32,768 lanes: its design kernel's arithmetic, 37.5 M operations a lane a step, is the
    # step's cost (33 s end to end predicted there, docs/measurements/2026-11-29-fused-peace-kernel.md)
    StudyRow("Peace, static d=16 B=320", 50.0, lanes=32_768),
    StudyRow("BayesGap, static d=16 B=320", 30.0),
    StudyRow("LinUCB, static d=16 B=320", 30.0),
    StudyRow("LT&S no averaging, many-arms", 110.0, target_s=None, target_rate=10_000.0),
)

#: a lease: device seconds in all, seconds to start the machine (31 s measured for an H200 on
#: 2026-11-28; one to two minutes allowed for), the longest command, and the seconds a command of
#: ``lease`` spends besides its rows (listing the workloads, writing the table, the transfers)
LEASE_S, LEASE_START_S, COMMAND_S, COMMAND_OVERHEAD_S = 900.0, 60.0, 540.0, 25.0


def study_rows(quick: bool, only=None) -> list[tuple[StudyRow, str]]:
    """(row, workload name) of every study row (``only``: names containing one of these)."""
    names = [w.name for w in workloads(quick)]
    out = []
    for row in STUDY:
        name = next(n for n in names if n.startswith(row.name))
        if not only or _matches(name, only):
            out.append((row, name))
    return out


def lease_plan(budgets: list[tuple[str, float]], lease_s: float = LEASE_S, start_s: float = LEASE_START_S,
               command_s: float = COMMAND_S, overhead_s: float = COMMAND_OVERHEAD_S):
    """The commands of a lease: ``budgets`` ((row, seconds) in the order they should run) cut
    into commands of at most ``command_s`` seconds (``overhead_s`` of each spent besides the
    rows) within the ``lease_s - start_s`` seconds left after the start.  Returns (commands: one
    list of row names each, rows left: those no command of this lease holds)."""
    commands, left = [], []
    remaining = lease_s - start_s
    cur, used = [], overhead_s
    for name, secs in budgets:
        if cur and (used + secs > command_s or used + secs > remaining):
            commands.append(cur)
            remaining -= used
            cur, used = [], overhead_s
        if used + secs > min(command_s, remaining):
            left.append(name)
            continue
        cur.append(name)
        used += secs
    if cur:
        commands.append(cur)
    return commands, left


def _rows_env() -> dict:
    """The environment of the row processes; this process then lists the workloads on the CPU,
    so that it takes none of the accelerator's memory (a process that touches a GPU reserves most
    of it, leaving the rows a fraction)."""
    env = dict(os.environ)
    os.environ["JAX_PLATFORMS"] = "cpu"
    return env


def _item_path(out: str, item: dict, platform: str) -> str:
    if item.get("kind") == "study":
        return _study_path(out, item["name"], platform)
    return _row_path(out, item["name"], platform, item.get("lanes"))


def _run_rows(todo, out: str, platform: str, quick: bool, total: float, env: dict, reps: int | None = None) -> list:
    """Runs the rows of ``todo`` not yet in ``out``, each in its own process with its time limit,
    until the next would end after ``total`` seconds; returns the rows left (none: every row
    done).  A row is (name, lanes, seconds) or a dict with ``name``, ``budget``, ``lanes`` and
    ``kind`` ("study": a row of :func:`study_row_main` of ``reps`` replications)."""
    todo = [t if isinstance(t, dict) else dict(name=t[0], lanes=t[1], budget=t[2]) for t in todo]
    t0 = time.perf_counter()
    left = [r for r in todo if not os.path.exists(_item_path(out, r, platform))]
    print(f"# {len(todo) - len(left)} of {len(todo)} rows already in {out}", flush=True)
    for started, item in enumerate(left):
        name, lanes, budget = item["name"], item.get("lanes"), item["budget"]
        spent = time.perf_counter() - t0
        if started and spent + budget > total:
            print(f"# time budget spent ({spent:.0f} s): run the same command again", flush=True)
            return left[started:]
        if item.get("kind") == "study":
            # the row's own budget leaves its process's start and a margin to the time limit
            cmd = [sys.executable, os.path.abspath(__file__), "study-row", name, "--out", out, "--platform",
                   platform, "--budget", str(max(1.0, budget * 0.85 - 8.0)), "--reps", str(reps)] + (
                ["--lanes", str(lanes)] if lanes else [])
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "row", name, "--out", out, "--platform", platform,
                   "--budget", str(budget * 0.6)] + (["--lanes", str(lanes)] if lanes else [])
        cmd += ["--quick"] if quick else []
        row_env = dict(env)
        if platform == "cpu":
            row_env["JAX_PLATFORMS"] = "cpu"
        path = _item_path(out, item, platform)
        t = time.perf_counter()
        base = dict(name=name, platform=platform, lanes_asked=lanes, kind=item.get("kind", "row"))
        try:
            code = subprocess.run(cmd, timeout=budget, env=row_env, check=False).returncode
        except subprocess.TimeoutExpired:  # a partial row (chunks done before the limit) is kept
            _ended_early(path, base, f"timed out after {budget:.0f} s")
        else:
            _ended_early(path, base, f"the process ended (exit code {code})")
        if os.path.exists(path):
            with open(path) as f:
                r = json.load(f)
            msg = r.get("error") or (f"{r['reps_per_s']:,.1f} reps/s at {r['lanes']} lanes, efficiency "
                                     f"{r['efficiency']:.2f}, peak {_mib(r['peak_bytes'])} MiB"
                                     + (f", {r['reps']:,} reps end to end in {r['e2e_s']:.1f} s"
                                        if "e2e_s" in r else ""))
        else:
            msg = "no result (the process died)"
        kind = "study" if item.get("kind") == "study" else f"lanes {lanes or 'default'}"
        print(f"  {name} [{platform}, {kind}] ({time.perf_counter() - t:.0f} s of {budget:.0f}): {msg}", flush=True)
    print("# all rows done", flush=True)
    return []


def _matches(name: str, patterns) -> bool:
    return any(s.lower() in name.lower() for s in patterns)


def run_main(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    env = _rows_env()
    todo = []
    for w in workloads(args.quick):
        if args.only and not _matches(w.name, args.only):
            continue
        sweep = [None] if args.platform == "cpu" else [None] + list(args.lanes)
        todo += [(w.name, lanes, args.row_budget) for lanes in sweep]
    _run_rows(todo, args.out, args.platform, args.quick, args.total, env)
    return 0


def plan_main(args) -> int:
    """What a 15-minute lease runs (``lease --plan``): each command's rows with their budgets, and
    the rows left for the next lease."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    items = lease_items(args)
    label = {f"{i['name']} [{i.get('kind') or i.get('lanes') or 'default'}]": i for i in items}
    commands, left = lease_plan([(k, i["budget"]) for k, i in label.items()])
    for k, names in enumerate(commands, 1):
        secs = sum(label[n]["budget"] for n in names) + COMMAND_OVERHEAD_S
        print(f"command {k} ({secs:.0f} s of at most {COMMAND_S:.0f}):")
        for n in names:
            print(f"  {label[n]['budget']:5.0f} s  {n}")
    study_left = [n for n in left if label[n].get("kind") == "study"]
    print(f"left for the next lease: {len(left)} rows ({len(study_left)} study rows"
          + (": " + "; ".join(study_left) if study_left else "") + ")")
    return 0


def _print_plan(items: list[dict]) -> None:
    commands, left = lease_plan([(f"{i['name']} [{i.get('kind') or i.get('lanes') or 'default'}]", i["budget"])
                                 for i in items])
    for k, names in enumerate(commands, 1):
        print(f"# a 15-minute lease, command {k}: {len(names)} rows", flush=True)
    if left:
        print(f"# rows a 15-minute lease leaves (the next lease runs them): {len(left)}", flush=True)


def lease_items(args) -> list[dict]:
    """The rows of ``lease`` in order: the study rows (10^6 replications each, with targets, each
    with its ``StudyRow.budget``), every other row at its default lanes, then the lane sweep."""
    study = study_rows(args.quick)
    items = [dict(name=name, budget=row.budget, kind="study", lanes=row.lanes) for row, name in study]
    names = [w.name for w in workloads(args.quick)]
    items += [dict(name=n, budget=args.row_budget) for n in names]
    if args.platform != "cpu":
        items += [dict(name=n, lanes=lanes, budget=args.row_budget) for n in names for lanes in args.lanes]
    return items


def _report_left(left: list[dict], out: str) -> None:
    study = [i["name"] for i in left if i.get("kind") == "study"]
    other = [i for i in left if i.get("kind") != "study"]
    if study:
        print(f"# study rows left ({len(study)}): " + "; ".join(study), flush=True)
    if other:
        print(f"# other rows left ({len(other)}): " + "; ".join(
            f"{i['name']} [lanes {i.get('lanes') or 'default'}]" for i in other), flush=True)
    if left:
        print(f"# rows left: run the same command again ({sum(i['budget'] for i in left):.0f} s of row budgets)",
              flush=True)


def lease_main(args) -> int:
    """The whole table in the order a short lease wants it (:func:`lease_items`: the study rows
    with targets first), at most ``--total`` seconds a command; ``table.md`` (the study table,
    then the rows' table) and ``rows.json`` (every row in one file) written in ``--out`` at the
    end, and the rows left named."""
    if args.plan:
        return plan_main(args)
    os.makedirs(args.out, exist_ok=True)
    env = _rows_env()
    items = lease_items(args)
    _print_plan(items)
    reps = STUDY_QUICK_REPS if args.quick else STUDY_REPS
    left = _run_rows(items, args.out, args.platform, args.quick, args.total, env, reps=reps)
    _write_tables(args.out, args.quick)
    _report_left(left, args.out)
    print(f"# {'all rows done' if not left else 'rows left: run the same command again'}; "
          f"{os.path.join(args.out, 'table.md')} and rows.json written", flush=True)
    return 0


def study_main(args) -> int:
    """The study: 10^6 replications of every study row (``--only``: some), compile included, one
    process a row, each within its ``StudyRow.budget`` (times ``--budget-scale``); prints the
    study table and writes ``study.md`` and ``rows.json`` in ``--out``."""
    os.makedirs(args.out, exist_ok=True)
    env = _rows_env()
    items = [dict(name=name, budget=row.budget * args.budget_scale, kind="study",
                  lanes=None if args.platform == "cpu" else row.lanes)
             for row, name in study_rows(args.quick, args.only)]
    reps = args.reps or (STUDY_QUICK_REPS if args.quick else STUDY_REPS)
    left = _run_rows(items, args.out, args.platform, args.quick, args.total, env, reps=reps)
    rows = _write_tables(args.out, args.quick)
    print(study_table([r for r in rows if r.get("kind") == "study"], args.quick), flush=True)
    _report_left(left, args.out)
    return 0


def _write_tables(out: str, quick: bool) -> list[dict]:
    rows = _read_rows(out)
    with open(os.path.join(out, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)
    study = [r for r in rows if r.get("kind") == "study"]
    other = [r for r in rows if r.get("kind") != "study"]
    with open(os.path.join(out, "table.md"), "w") as f:
        if study:
            f.write(study_table(study, quick) + "\n\n")
        f.write(_table_text(other) + "\n")
    return rows


def _read_rows(out: str) -> list[dict]:
    rows = []
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".json") and "__" in fn:
            with open(os.path.join(out, fn)) as f:
                rows.append(json.load(f))
    return rows


def _table_text(rows: list[dict]) -> str:
    envs = {json.dumps(r.get("env", {}), sort_keys=True) for r in rows if r.get("env")}
    return "\n".join([f"# {e}" for e in envs] + [table(rows)])


def table_main(args) -> int:
    print(_table_text(_read_rows(args.out)))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the rows not yet in --out, each in its own process")
    r.add_argument("--out", required=True)
    r.add_argument("--platform", default="gpu", help="gpu (the accelerator) or cpu")
    r.add_argument("--lanes", type=int, nargs="*", default=[4096, 16384, 65536], help="lane sweep (accelerator)")
    r.add_argument("--row-budget", type=float, default=150.0, help="seconds per row, compilation included")
    r.add_argument("--total", type=float, default=500.0, help="stop starting rows after this many seconds")
    r.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these")
    r.add_argument("--quick", action="store_true", help="small instances: a smoke test on a CPU")
    e = sub.add_parser("lease", help="every row, those with targets first, then the lane sweep; writes "
                                     "table.md and rows.json in --out")
    e.add_argument("--out", required=True)
    e.add_argument("--platform", default="gpu", help="gpu (the accelerator) or cpu")
    e.add_argument("--lanes", type=int, nargs="*", default=[4096, 65536], help="lane sweep (accelerator)")
    e.add_argument("--row-budget", type=float, default=90.0, help="seconds per row without a target")
    e.add_argument("--total", type=float, default=COMMAND_S - COMMAND_OVERHEAD_S,
                   help="stop starting rows after this many seconds (default: a 9-minute command)")
    e.add_argument("--quick", action="store_true", help="small instances: a smoke test on a CPU")
    e.add_argument("--plan", action="store_true", help="print the commands a 15-minute lease runs, and the "
                                                       "rows it leaves, without running any")
    st = sub.add_parser("study", help="10^6 replications of each seed paper's headline workload, end to end, one "
                                      "process a row; prints the study table")
    st.add_argument("--out", required=True)
    st.add_argument("--platform", default="gpu", help="gpu (the accelerator) or cpu")
    st.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these")
    st.add_argument("--reps", type=int, default=None, help="replications a row (default 10^6; --quick: 64)")
    st.add_argument("--budget-scale", type=float, default=1.0, help="multiplies every row's budget")
    st.add_argument("--total", type=float, default=500.0, help="stop starting rows after this many seconds")
    st.add_argument("--quick", action="store_true", help="small instances and 64 replications: a smoke test on a CPU")
    sr = sub.add_parser("study-row", help="one study row in this process (used by study and lease)")
    sr.add_argument("name")
    sr.add_argument("--out", required=True)
    sr.add_argument("--platform", default="gpu")
    sr.add_argument("--reps", type=int, default=STUDY_REPS)
    sr.add_argument("--budget", type=float, default=60.0)
    sr.add_argument("--lanes", type=int, default=None, help="lanes (default: simulate's for --reps tasks)")
    sr.add_argument("--quick", action="store_true")
    o = sub.add_parser("row", help="one row in this process (used by run and lease)")
    o.add_argument("name")
    o.add_argument("--out", required=True)
    o.add_argument("--platform", default="gpu")
    o.add_argument("--lanes", type=int, default=None)
    o.add_argument("--budget", type=float, default=90.0)
    o.add_argument("--quick", action="store_true")
    t = sub.add_parser("table", help="print the table of the rows in --out")
    t.add_argument("out")
    args = p.parse_args(argv)
    return {"run": run_main, "lease": lease_main, "row": row_main, "table": table_main, "study": study_main,
            "study-row": study_row_main}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
