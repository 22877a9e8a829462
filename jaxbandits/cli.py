"""The ``jaxbandits`` command.

* ``jaxbandits calibrate path/to/file.py:MyAlgorithm [--quick | --full]``: :func:`jaxbandits.calibrate`;
  the table is printed and written to ``results/calibration/<name>_<code version>/`` (exit status 1
  when the overall verdict is FAIL).
* ``jaxbandits benchmark path/to/file.py:MyAlgorithm [...] --suite fixed-confidence [--quick | --full]``:
  :func:`jaxbandits.benchmark`; report, tables and figures under
  ``results/benchmark/<suite>-v<version>-<size>/``.
* ``jaxbandits suites``: the suites, their versions and instance sets.
* anything else: the experiments (``jaxbandits seed000_table1 --quick``, as ``python -m experiments``).
* ``jaxbandits --help``: the usage of every subcommand (:data:`USAGE`).

A command-line error is one line naming the argument, the value and what is allowed (the
algorithm names a file defines, the suites, the baselines), exit status 2.

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

#: what ``jaxbandits --help`` prints
USAGE = """usage: jaxbandits COMMAND [...]

  jaxbandits calibrate FILE.py:NAME [--quick|--full] [--reps N] [--out DIR] ...
      calibration checks of your algorithm (delta-correctness, sigma^2 scaling, lower bound)
  jaxbandits benchmark FILE.py:NAME [...] [--suite S] [--quick|--full] [--out DIR] ...
      your algorithm(s) beside the library's on a standard, versioned suite
  jaxbandits suites
      the benchmark suites, their versions and instance sets
  jaxbandits EXPERIMENT [--quick] [--reps N] [--seed S] [--out DIR] [--devices N]
      reproduce a paper's table or figure (as python -m experiments EXPERIMENT)
  jaxbandits
      the experiments with their times (as python -m experiments)

An algorithm is FILE.py:NAME, module:NAME or label=FILE.py:NAME (NAME: an Algorithm class, a
configured algorithm or a factory delta -> Algorithm).  jaxbandits COMMAND --help for a
command's options; python -m experiments --help for an experiment's."""


class _Parser(argparse.ArgumentParser):
    """argparse with each command-line error on one line, without the usage block:
    ``PROG: error: argument --x: ... (PROG --help for the usage)``, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help for the usage)\n")


def _params(items, parser) -> dict:
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        if not _ or not k:
            parser.error(f"argument --param: expected FIELD=VALUE, got {it!r}")
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def _algorithm(spec: str, params: dict, parser, arg: str = "algorithm"):
    """(label, algorithm) of ``[label=]FILE.py:NAME``; a spec that does not load, or ``--param``
    fields the algorithm lacks, end the command with a one-line error."""
    import dataclasses

    from jaxbandits.byo import LoadError, load_object, as_algorithm, name_of

    label = None
    if "=" in spec.split(":", 1)[0]:
        label, spec = spec.split("=", 1)
    try:
        obj = load_object(spec)
    except LoadError as e:
        parser.error(f"argument {arg}: {e}")
    if params and dataclasses.is_dataclass(obj):
        # the hyperparameters (the engine's batching policy is not one: not shown, not settable here)
        fields = [f.name for f in dataclasses.fields(obj) if f.init and f.repr]
        bad = [k for k in params if k not in fields]
        if bad:
            parser.error(f"argument --param: {name_of(obj)} has no field {', '.join(map(repr, bad))}; "
                         f"its fields: {', '.join(fields)}")
    try:
        alg = as_algorithm(obj, **params)
    except (TypeError, ValueError) as e:
        parser.error(f"argument {'--param' if params else arg}: {spec}: {e}")
    return label or spec.rsplit(":", 1)[1] or name_of(alg), alg


def _refused(e: BaseException) -> bool:
    """Whether ``e`` was raised by an input check (of calibrate, benchmark, sweep or
    jaxbandits.validation: an algorithm the command cannot run, such as a fixed-budget one given
    to calibrate), not by a computation: a check is one line, anything else keeps its traceback."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(e.__traceback__)
    checks = {Path(__file__).with_name(n) for n in ("byo.py", "benchmarking.py", "sweeps.py", "validation.py")}
    return bool(frames) and Path(frames[-1].filename) in checks


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
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (by default one appears on a terminal when a job lasts a few seconds)")
    p.add_argument("--no-compile-cache", action="store_true",
                   help="do not use the persistent compilation cache (~/.cache/jaxbandits/xla)")


def _size(args) -> str:
    if args.size:
        return args.size
    import jax

    return "quick" if jax.default_backend() == "cpu" else "full"


def calibrate_main(argv) -> int:
    p = _Parser(prog="jaxbandits calibrate",
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

    name, alg = _algorithm(args.algorithm, _params(args.param, p), p)
    t0 = time.time()
    try:
        df = calibrate(alg, size=_size(args), n_reps=args.reps, name=name, scaling=args.scaling,
                       max_steps=args.max_steps or CAL_MAX_STEPS, key=args.seed,
                       out=args.out or "results/calibration", progress=False if args.no_progress else None)
    except (ValueError, TypeError) as e:
        if not _refused(e):
            raise
        p.error(f"argument algorithm: {e}")
    print(calibration_markdown(df))
    a = df.attrs
    back = (f"; {a['runs_read_back']} of {a['runs_read_back'] + a['runs_computed']} runs read back from "
            f"{a['folder']}/rows.csv, {a['seconds']:.0f} s when computed" if a.get("runs_read_back") else "")
    print(f"[calibrate] {name}: {a['verdict']} ({time.time() - t0:.0f} s{back}); "
          f"results in {args.out or 'results/calibration'}/")
    return 0 if df.attrs["verdict"] == "pass" else 1


def benchmark_main(argv) -> int:
    p = _Parser(prog="jaxbandits benchmark",
                description="your algorithms beside the library's on a standard, versioned suite")
    p.add_argument("algorithms", nargs="+", help="FILE.py:NAME, module:NAME or label=FILE.py:NAME")
    p.add_argument("--suite", default="fixed-confidence", help="fixed-confidence, top-m or fixed-budget")
    _common(p)
    p.add_argument("--baselines", default="suite",
                   help="'suite' (the suite's baselines at this size), 'none', or names separated by commas")
    args = p.parse_args(argv)
    from jaxbandits.benchmarking import SUITES, benchmark

    if args.suite not in SUITES:
        p.error(f"argument --suite: unknown suite {args.suite!r}; available: {', '.join(SUITES)}")
    base = True if args.baselines == "suite" else False if args.baselines == "none" else [
        b.strip() for b in args.baselines.split(",") if b.strip()]
    if isinstance(base, list):
        unknown = [b for b in base if b not in SUITES[args.suite].baselines]
        if unknown or not base:
            p.error(f"argument --baselines: {args.baselines!r}: " + (
                f"no baseline {', '.join(map(repr, unknown))} in the suite {args.suite}" if unknown else "no name")
                + f"; available: 'suite', 'none' or names separated by commas among "
                f"{', '.join(SUITES[args.suite].baselines)}")
    _setup(args)
    params = _params(args.param, p)
    algs = dict(_algorithm(s, params, p, "algorithms") for s in args.algorithms)
    try:
        rep = benchmark(algs, args.suite, size=_size(args), out=args.out or "results/benchmark", baselines=base,
                        progress=False if args.no_progress else None)
    except (ValueError, TypeError) as e:
        if not _refused(e):
            raise
        p.error(f"argument algorithms: {e}")
    print(rep.markdown)
    print(f"[benchmark] report: {rep.report_path} ({rep.metadata['wall_time']:.0f} s)")
    for line in rep.verdict:
        print(f"[benchmark] {line}")
    return 0


def suites_main(argv) -> int:
    _Parser(prog="jaxbandits suites", description="the benchmark suites: versions, instance sets and "
            "baselines (jaxbandits benchmark --suite NAME)").parse_args(argv)
    from jaxbandits.benchmarking import SUITES

    for s in SUITES.values():
        print(f"{s.name} v{s.version}: {s.description}")
        for i in s.sets:
            print(f"  {i.name:16s} {i.description}")
        print(f"  baselines: {', '.join(s.baselines)} (quick: {', '.join(s.quick_baselines)})")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not argv or argv[0] not in COMMANDS:
        if not argv:
            print(USAGE.split("\n\n")[1] + "\n")
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
    except KeyboardInterrupt:
        # one line (after the sweep's, which names the rows.csv it was writing) instead of a traceback
        out = _option(rest, "--out") or f"results/{'calibration' if cmd == 'calibrate' else 'benchmark'}"
        print(f"\n[{cmd}] interrupted: every finished chunk is saved in the rows.csv files under {out}/; "
              "rerun the same command to resume from there", file=sys.stderr, flush=True)
        return 130


def _option(argv: list[str], flag: str) -> str | None:
    """The value of ``flag`` in ``argv`` (``--out DIR`` or ``--out=DIR``; the last one), or None."""
    value = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


if __name__ == "__main__":
    sys.exit(main())
