"""The ``jaxbandits`` command.

* ``jaxbandits calibrate path/to/file.py:MyAlgorithm [--quick | --full]``: :func:`jaxbandits.calibrate`;
  the table is printed and written to ``results/calibration/<name>_<code version>/`` (exit status 1
  when the overall verdict is FAIL).
* ``jaxbandits benchmark path/to/file.py:MyAlgorithm [...] --suite fixed-confidence [--quick | --full]``:
  :func:`jaxbandits.benchmark`; report, tables and figures under
  ``results/benchmark/<suite>-v<version>-<size>/``.
* ``jaxbandits suites``: the suites, their versions and instance sets.
* anything else: the experiments (``jaxbandits seed000_table1 --quick``, as ``python -m experiments``).

An algorithm is named ``FILE.py:NAME`` (or ``module:NAME``), optionally ``label=FILE.py:NAME``;
NAME is an Algorithm class (built with its defaults and ``--param field=value``), a configured
algorithm or a factory ``delta -> Algorithm``.  Both commands resume: finished runs are read back
from the output folder, so an interrupted command continues where it stopped.
"""
from __future__ import annotations

import argparse
import ast
import sys
import time

COMMANDS = ("calibrate", "benchmark", "suites")


def _params(items) -> dict:
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        if not _:
            raise SystemExit(f"--param expects field=value, got {it!r}")
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def _algorithm(spec: str, params: dict):
    from jaxbandits.byo import load_algorithm, name_of

    label = None
    if "=" in spec.split(":", 1)[0]:
        label, spec = spec.split("=", 1)
    alg = load_algorithm(spec, **params)
    return label or spec.rsplit(":", 1)[1] or name_of(alg), alg


def _setup(args) -> None:
    from jaxbandits import compilation_cache, precision

    precision.enable_globally()
    if not (args.no_compile_cache or compilation_cache.disabled_by_env()):
        compilation_cache.enable()
    import matplotlib

    matplotlib.use("Agg")


def _common(p):
    from jaxbandits import validation

    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="size", action="store_const", const="quick",
                      help="CPU size (default on a CPU)")
    size.add_argument("--full", dest="size", action="store_const", const="full",
                      help="accelerator size (default on a GPU / TPU)")
    p.add_argument("--param", action="append", metavar="FIELD=VALUE", help="set a field of the algorithm(s)")
    p.add_argument("--out", default=None, type=validation.cli_out_dir, help="output folder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-compile-cache", action="store_true",
                   help="do not use the persistent compilation cache (~/.cache/jaxbandits/xla)")


def _size(args) -> str:
    if args.size:
        return args.size
    import jax

    return "quick" if jax.default_backend() == "cpu" else "full"


def calibrate_main(argv) -> int:
    p = argparse.ArgumentParser(prog="jaxbandits calibrate",
                                description="delta-correctness, sigma^2 scaling and lower-bound checks of an algorithm")
    p.add_argument("algorithm", help="FILE.py:NAME, module:NAME or label=FILE.py:NAME")
    _common(p)
    from jaxbandits import validation

    p.add_argument("--reps", type=validation.cli_positive_int, default=None,
                   help="runs per (sigma, delta) (quick 100, full 500)")
    p.add_argument("--scaling", choices=("exact", "approximate", "none"), default="exact")
    p.add_argument("--max-steps", type=validation.cli_positive_int, default=None)
    p.add_argument("--seed", type=validation.cli_seed, default=0)
    args = p.parse_args(argv)
    _setup(args)
    from jaxbandits.byo import CAL_MAX_STEPS, calibrate, calibration_markdown

    name, alg = _algorithm(args.algorithm, _params(args.param))
    t0 = time.time()
    df = calibrate(alg, size=_size(args), n_reps=args.reps, name=name, scaling=args.scaling,
                   max_steps=args.max_steps or CAL_MAX_STEPS, key=args.seed, out=args.out or "results/calibration",
                   progress=not args.no_progress)
    print(calibration_markdown(df))
    print(f"[calibrate] {name}: {df.attrs['verdict']} ({time.time() - t0:.0f} s); "
          f"results in {args.out or 'results/calibration'}/")
    return 0 if df.attrs["verdict"] == "pass" else 1


def benchmark_main(argv) -> int:
    p = argparse.ArgumentParser(prog="jaxbandits benchmark",
                                description="your algorithms beside the library's on a standard, versioned suite")
    p.add_argument("algorithms", nargs="+", help="FILE.py:NAME, module:NAME or label=FILE.py:NAME")
    p.add_argument("--suite", default="fixed-confidence", help="fixed-confidence, top-m or fixed-budget")
    _common(p)
    p.add_argument("--baselines", default="suite",
                   help="'suite' (the suite's baselines at this size), 'none', or names separated by commas")
    args = p.parse_args(argv)
    _setup(args)
    from jaxbandits.benchmarking import SUITES, benchmark

    if args.suite not in SUITES:
        print(f"unknown suite {args.suite!r}; known: {', '.join(SUITES)}", file=sys.stderr)
        return 2
    params = _params(args.param)
    algs = dict(_algorithm(s, params) for s in args.algorithms)
    base = True if args.baselines == "suite" else False if args.baselines == "none" else [
        b.strip() for b in args.baselines.split(",") if b.strip()]
    rep = benchmark(algs, args.suite, size=_size(args), out=args.out or "results/benchmark", baselines=base,
                    progress=not args.no_progress)
    print(rep.markdown)
    print(f"[benchmark] report: {rep.report_path} ({rep.metadata['wall_time']:.0f} s)")
    return 0


def suites_main(argv) -> int:
    from jaxbandits.benchmarking import SUITES

    for s in SUITES.values():
        print(f"{s.name} v{s.version}: {s.description}")
        for i in s.sets:
            print(f"  {i.name:16s} {i.description}")
        print(f"  baselines: {', '.join(s.baselines)} (quick: {', '.join(s.quick_baselines)})")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        if not argv or argv[0] in ("-h", "--help"):
            print("jaxbandits calibrate FILE.py:NAME [--quick|--full]    calibration checks of your algorithm\n"
                  "jaxbandits benchmark FILE.py:NAME [--suite S] [--quick|--full]    your algorithm beside the library's\n"
                  "jaxbandits suites                                    the benchmark suites\n"
                  "jaxbandits [EXPERIMENT [--quick] ...]               the experiments (python -m experiments)\n")
        from experiments.__main__ import main as experiments_main

        return experiments_main(argv)
    cmd, rest = argv[0], argv[1:]
    fn = dict(calibrate=calibrate_main, benchmark=benchmark_main, suites=suites_main)[cmd]
    from jaxbandits.watchdog import StalledComputation, restart_in_fresh_process

    try:
        return fn(rest)
    except StalledComputation as e:
        restart_in_fresh_process(e, "jaxbandits.cli", argv, "jaxbandits")
        return 1


if __name__ == "__main__":
    sys.exit(main())
