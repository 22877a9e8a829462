"""Programs compiled per experiment, cold and warm.

For every experiment (``python -m experiments NAME --quick``, or its default size with
``--full``), two runs in fresh processes sharing one new persistent compilation cache folder
(:mod:`jaxbandits.compilation_cache`):

* cold: the cache folder is empty; every program is compiled by XLA;
* warm: the same command again (into a new output folder, so nothing is resumed from disk);
  programs come from the cache.

Reported from each run's ``metadata.json``: the engine programs (``engine_programs_compiled``:
traced and lowered, counted whether XLA compiled them or the cache served them), the seconds
spent on them (``engine_compile_seconds``), XLA compilations of every jitted function
(persistent-cache lookups minus hits: design solvers and lower bounds included), the peak
number of memory mappings (``/proc/self/maps``; XLA:CPU keeps ~750 per program) and wall time.

``--sweep`` adds an acceptance sweep of dynamic hyperparameters: 3 algorithms (UniformGLR, LinGapE, XY-static)
x 4 deltas x 3 values of K, 16 replications each, run the same way (cold, then warm).

Usage: ``python benchmarks/compile_counts.py [NAME ...] [--full] [--sweep] [--no-experiments]``.
Runs one process at a time; on 2 shared cores the quick runs of all experiments take tens of
minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(cache: Path) -> dict:
    env = dict(os.environ, JAXBANDITS_COMPILATION_CACHE=str(cache))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_experiment(name: str, cache: Path, out: Path, full: bool) -> dict:
    cmd = [sys.executable, "-m", "experiments", name, "--quiet", "--out", str(out)]
    if not full:
        cmd.append("--quick")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(cache), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    meta_path = out / "metadata.json"
    if proc.returncode != 0 or not meta_path.exists():
        return dict(error=(proc.stderr or proc.stdout)[-400:], wall=wall)
    meta = json.loads(meta_path.read_text())
    meta["wall"] = wall
    return meta


def sweep_child() -> None:
    """The acceptance sweep, in this process; prints one JSON line."""
    import jax

    from jaxbandits import compilation_cache, engine
    from jaxbandits.algorithms import UniformGLR, XYStatic
    from jaxbandits.algorithms.fixed_confidence.lingape import LinGapE
    from jaxbandits.instances import seeds

    compilation_cache.enable(min_compile_seconds=0.0)  # every program persisted: warm = no XLA compile
    algs = [UniformGLR, LinGapE, XYStatic]
    deltas = [0.2, 0.1, 0.05, 0.01]
    Ks = (4, 8, 16)
    for make in algs:
        for K in Ks:
            inst = seeds.unit_sphere(jax.random.key(K), K, 3)
            for delta in deltas:
                engine.simulate(make(delta=delta), inst, jax.random.key(0), 16, 2000)
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    print(json.dumps(dict(engine_programs_compiled=engine.programs_compiled(), peak_memory_mappings=maps,
                          engine_compile_seconds=engine.compile_seconds(),
                          compile_cache=compilation_cache.counts(),
                          configurations=len(algs) * len(deltas) * len(Ks))))


def run_sweep(cache: Path) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--sweep-child"], cwd=ROOT, env=_env(cache),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return dict(error=proc.stderr[-400:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = time.perf_counter() - t0
    return out


def row(name: str, cold: dict, warm: dict) -> str:
    def xla(m):
        c = m.get("compile_cache") or {}
        return c.get("requests", 0) - c.get("hits", 0) if c else "?"

    if "error" in cold or "error" in warm:
        return f"| {name} | error: {(cold.get('error') or warm.get('error', '')).splitlines()[-1:]} |"
    return (f"| {name} | {cold['engine_programs_compiled']} | {cold['engine_compile_seconds']:.1f} | "
            f"{warm['engine_compile_seconds']:.1f} | {xla(cold)} | {xla(warm)} | "
            f"{cold.get('peak_memory_mappings', 'n/a')} | {cold['wall']:.0f} | {warm['wall']:.0f} |")


HEADER = ("| experiment | engine programs | compile s cold | compile s warm | XLA compiles cold | "
          "XLA compiles warm | peak mappings | wall s cold | wall s warm |\n"
          "|---|---|---|---|---|---|---|---|---|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="experiments (default: all)")
    ap.add_argument("--full", action="store_true", help="default sizes instead of --quick")
    ap.add_argument("--sweep", action="store_true", help="also the 3 x 4 x 3 acceptance sweep")
    ap.add_argument("--no-experiments", action="store_true")
    ap.add_argument("--sweep-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sweep_child:
        sweep_child()
        return
    sys.path.insert(0, str(ROOT))
    from experiments._runner import discover

    names = [] if args.no_experiments else (args.names or list(discover()))
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="compile-counts-") as tmp:
        tmp = Path(tmp)
        for name in names:
            cache = tmp / f"cache-{name}"
            cold = run_experiment(name, cache, tmp / f"{name}-cold", args.full)
            warm = run_experiment(name, cache, tmp / f"{name}-warm", args.full)
            print(row(name, cold, warm), flush=True)
        if args.sweep:
            cache = tmp / "cache-sweep"
            cold, warm = run_sweep(cache), run_sweep(cache)
            print(row("sweep 3 algs x 4 deltas x 3 K", cold, warm), flush=True)


if __name__ == "__main__":
    main()
