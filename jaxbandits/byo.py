"""Bring your own algorithm: calibrate an algorithm written outside the library, and load it from a file.

:func:`calibrate` runs the calibration checks of :mod:`jaxbandits.calibration` on any algorithm that
follows the contract of :mod:`jaxbandits.algorithms.base` (the checks, the instances, the noise grid
and the level are defined there, once):

* on the calibration instance (hard Top-1 of seed 003 Fig. 1(b) for best-arm identification, the
  classic K = 4, m = 2 instance for Top-2), at every noise level sigma in {0.5, 1, 3} and every
  delta in {0.05, 0.2}, the instance having theta scaled with sigma so that every grid point is the
  same problem in units of sigma;
* **error**: H0 "error rate <= delta", exact one-sided binomial test (runs that hit the step cap
  count as errors), Clopper-Pearson interval reported;
* **scaling** (``scaling="exact"``, the default, for an algorithm that uses sigma wherever its
  widths, thresholds and phase sizes need it): the stopping times at sigma = 0.5 and 3 against the
  sigma = 1 run (Welch and Kolmogorov-Smirnov, two-sided); ``"approximate"``: the mean within a
  factor 3; ``"none"``: reported only;
* **lower bound** (best-arm identification): H0 "E[tau] >= sigma^2 T* kl(delta, 1 - delta)", which
  every algorithm that is delta-correct on every instance satisfies (seed 000 Thm 1), one-sided.

Each check is at level :data:`jaxbandits.calibration.ALPHA` (1e-3).  A row's verdict is "pass" or
"FAIL: <checks>", and the table's overall verdict (``df.attrs["verdict"]``, :func:`verdict`) is
"pass" only when every row passes.

What the checks can and cannot see.  An algorithm that ignores sigma fails the scaling check
(its stopping time moves by up to 9x between sigma = 1 and 3).  A threshold that is too small at
every sigma keeps the scaling law; it is caught by the lower-bound check when the sampling rule is
efficient enough that the shortened run falls below sigma^2 T* kl(delta, 1 - delta), or by the
error check when the threshold becomes too small for delta.  Measured (200 runs, hard Top-1):
Frank-Wolfe Sampling with its threshold divided by 3 stops after 216 +- 18 pulls against a lower
bound of 583 at delta = 0.05 (FAIL, z = -20); G-optimal tracking (docs/examples/gopt_tracking.py)
wastes about 3x the optimal allocation's samples, so with its threshold divided by 3 it stops at
576 +- 30, at the bound, and errs 1/300 times: no finite test can call that run wrong.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from jaxbandits import calibration as cal
from jaxbandits.algorithms.base import Algorithm
from jaxbandits.tables import markdown_table

#: replications per (sigma, delta) grid point
SIZES = {"quick": 100, "full": 500}
CAL_MAX_STEPS = 2_000_000


# -- loading an algorithm from a file ---------------------------------------------------------------
class LoadError(ValueError):
    """An algorithm named ``FILE.py:NAME`` or ``module:NAME`` could not be loaded: the file or
    module is missing, fails to import, or does not define NAME (the message lists what it does
    define)."""


def algorithm_names(module, own: bool = True) -> list[str]:
    """The names in ``module`` that :func:`as_algorithm` accepts: :class:`Algorithm` classes,
    configured algorithms and functions (factories); with ``own`` (a user's file) only those it
    defines, not those it imports; else (a module named ``module:NAME``) every Algorithm class and
    configured algorithm it holds, and the functions it defines."""
    out = []
    for key, obj in vars(module).items():
        if key.startswith("_") or obj is Algorithm:
            continue
        mine = getattr(obj, "__module__", None) == module.__name__
        if isinstance(obj, Algorithm) or inspect.isfunction(obj) and mine:
            out.append(key)
        elif isinstance(obj, type) and issubclass(obj, Algorithm) and (mine or not own):
            out.append(key)
    return out


def _import_file(path: Path, where: str):
    """The module of ``path`` (imported once, as a module of its own)."""
    modname = "jaxbandits_user_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(
        str(path).encode()).hexdigest()[:8]
    module = sys.modules.get(modname)
    if module is not None:
        return module
    s = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(s)
    sys.modules[modname] = module  # dataclasses and pickling look the module up
    try:
        s.loader.exec_module(module)
    except Exception as e:
        del sys.modules[modname]  # a later attempt (the file fixed) imports it again
        raise LoadError(f"{where} could not be imported: {_first_error(e, path)}") from e
    return module


def _first_error(e: BaseException, path: Path) -> str:
    """``e`` in one line, with the line of ``path`` where it was raised."""
    import traceback

    line = getattr(e, "lineno", None) if isinstance(e, SyntaxError) else None
    if line is None:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename) == path]
        line = frames[-1].lineno if frames else None
    msg = (e.msg if isinstance(e, SyntaxError) else str(e)).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}" + (f" (line {line})" if line else "")


def load_object(spec: str):
    """``"path/to/file.py:Name"`` -> the object ``Name`` of that file (imported as a module of its
    own, nothing registered in the library).  ``"package.module:Name"`` imports a module by name.

    Raises :class:`LoadError` (a ``ValueError``) naming the spec when the file or module is
    missing, fails to import (the error and its line), or does not define ``Name`` (the algorithm
    names it does define listed)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise LoadError(f"expected FILE.py:NAME or module:NAME, got {spec!r}")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py") or Path(where).exists():
        path = Path(where).resolve()
        if not path.is_file():
            raise LoadError(f"{spec!r}: no file {where!r}" + (" (it is a folder)" if path.exists() else ""))
        module = _import_file(path, where)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name and where.startswith(e.name) and (where == e.name or where[len(e.name)] == "."):
                raise LoadError(f"{spec!r}: no module {where!r} (and no file of that name)") from None
            raise LoadError(f"{where} could not be imported: {type(e).__name__}: {e}") from e
        except Exception as e:
            raise LoadError(f"{where} could not be imported: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
    if not name or not hasattr(module, name):
        import difflib

        names = algorithm_names(module, own=where.endswith(".py") or Path(where).exists())
        near = difflib.get_close_matches(name, names, n=1)
        raise LoadError(f"{where} defines no {name!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                        + f"; the algorithms it defines: {', '.join(names) if names else 'none'} "
                        "(Algorithm classes, configured algorithms and factories)")
    return getattr(module, name)


def as_algorithm(obj, **params) -> Algorithm | Callable:
    """An :class:`Algorithm` class (instantiated with ``params``, else its defaults), a configured
    algorithm, or a factory ``delta -> Algorithm`` (returned as it is)."""
    if isinstance(obj, type) and issubclass(obj, Algorithm):
        return obj(**params)
    if params:
        if isinstance(obj, Algorithm):
            return dataclasses.replace(obj, **params)
        raise TypeError("parameters can only be given to an Algorithm class or instance")
    if isinstance(obj, Algorithm) or callable(obj):
        return obj
    raise TypeError(f"not an algorithm, an Algorithm class nor a factory: {obj!r}")


def load_algorithm(spec: str, **params):
    """``"file.py:MyAlgorithm"`` -> a configured algorithm (or factory), see :func:`as_algorithm`."""
    return as_algorithm(load_object(spec), **params)


def configure(algorithm, delta: float | None = None, **fields) -> Algorithm:
    """The algorithm at ``delta`` (a factory is called with it; a configured algorithm gets its
    ``delta`` replaced), with the other ``fields`` replaced where the algorithm has them."""
    if callable(algorithm) and not isinstance(algorithm, Algorithm):
        alg = algorithm(delta) if delta is not None else algorithm()
    elif delta is not None:
        if not any(f.name == "delta" for f in dataclasses.fields(algorithm)):
            raise ValueError(f"{type(algorithm).__name__} has no delta field; give a factory delta -> algorithm")
        alg = dataclasses.replace(algorithm, delta=delta)
    else:
        alg = algorithm
    names = {f.name for f in dataclasses.fields(alg)}
    put = {k: v for k, v in fields.items() if k in names}
    return dataclasses.replace(alg, **put) if put else alg


def name_of(algorithm) -> str:
    return type(algorithm).__name__ if isinstance(algorithm, Algorithm) else getattr(
        algorithm, "__name__", type(algorithm).__name__)


def _layers(algorithm) -> list:
    """The algorithm and every algorithm or rule held in its fields, recursively: a
    :class:`~jaxbandits.algorithms.base.Wrapper`'s wrapped algorithm, the rules of a composition
    (:func:`jaxbandits.rules.compose`, your own rules included), whatever their fields are called."""
    from jaxbandits.algorithms.base import Configurable

    out = [algorithm]
    if dataclasses.is_dataclass(algorithm):
        for f in dataclasses.fields(algorithm):
            value = getattr(algorithm, f.name, None)
            if isinstance(value, Configurable):
                out += _layers(value)
    return out


def code_version(algorithm) -> str:
    """A short hash of the configuration, of the library sources its results depend on
    (:func:`jaxbandits.calibration.code_version`) and of the source files outside the library that
    define its classes (your own file): results stored under it are read back only while none of
    these changed."""
    h = hashlib.sha1(cal.code_version(algorithm).encode())
    layers = _layers(algorithm)
    files, root = set(), Path(__file__).resolve().parent
    for cls in (c for a in layers for c in type(a).__mro__ if c is not object):
        try:
            f = inspect.getsourcefile(cls)
        except TypeError:
            continue
        if f and not Path(f).resolve().is_relative_to(root):
            files.add(Path(f).resolve())
    for f in sorted(files):
        h.update(f.read_bytes())
    return h.hexdigest()[:8]


def library_version() -> str:
    """jaxbandits version plus the git commit of the checkout (with "+dirty" when it has changes),
    or the version alone when it is not a git checkout."""
    import subprocess

    version = sys.modules["jaxbandits"].__version__  # the package is loaded (its module imports this one)
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "jaxbandits"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    return version + (f"+{commit}" if commit else "") + ("+dirty" if dirty else "")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "algorithm"


# -- calibrate --------------------------------------------------------------------------------------
def verdict(df) -> str:
    """The overall verdict of a :func:`calibrate` table: "pass" when every row passes, else
    "FAIL (n of N rows: ...)"."""
    bad = df[df["verdict"] != "pass"]
    if not len(bad):
        return "pass"
    what = sorted({c.strip() for v in bad["verdict"] for c in str(v).replace("FAIL:", "").split(",")})
    return f"FAIL ({len(bad)} of {len(df)} rows: {', '.join(what)})"


def calibrate(algorithm, *, size: str = "quick", n_reps: int | None = None, name: str | None = None,
              scaling: str = "exact", max_steps: int = CAL_MAX_STEPS, key: int = 0,
              out: str | Path | None = None, progress: bool | None = None, sigmas=cal.SIGMAS, deltas=cal.DELTAS,
              **simulate_kw):
    """Calibrate a fixed-confidence (best-arm or Top-2) algorithm: delta-correctness by exact
    binomial tests, the sigma^2 scaling law and the lower bound, on the grid sigma x delta
    (module docstring).

    Args:
      algorithm: a configured :class:`~jaxbandits.algorithms.base.Algorithm` with a ``delta``
        field (replaced by each delta of the grid), an Algorithm class (its defaults), or a factory
        ``delta -> Algorithm``.  ``sigma`` should be left to the instance (None), as the library's
        algorithms do: the grid changes the instance's noise.
      size: "quick" (100 runs per grid point, minutes on a laptop CPU) or "full" (500, the seed
        papers' count); ``n_reps`` overrides it.
      name: the algorithm's name in the table (default: its class name).
      scaling: "exact", "approximate" or "none" (module docstring).
      max_steps: step cap per run (capped runs count as errors and fail their row).
      key: seed of the runs (every grid point has its own key).
      out: folder to keep the runs in; a rerun reads back what is there (runs are stored under the
        algorithm's :func:`code_version`, so a changed algorithm is rerun).
      progress: a progress bar over the grid points, with each run's under it
        (:mod:`jaxbandits.progress`): None (default) when stderr is a terminal, True always, False
        never.
      sigmas, deltas: the grid (default the calibration suite's; sigma = 1 must be in it for the
        scaling check).
      simulate_kw: passed to :func:`jaxbandits.engine.simulate` (lanes, chunk_size, ...).

    Returns:
      A :class:`pandas.DataFrame`, one row per (sigma, delta): runs, errors, capped, error rate
      with its 95 % Clopper-Pearson interval and binomial p-value, mean +- SE, lower bound and
      ratio, the scaling comparison with sigma = 1, and ``verdict``.  ``df.attrs["verdict"]`` is
      the overall verdict (:func:`verdict`); ``df.attrs`` also holds the code version and sizes.
    """
    import pandas as pd

    from jaxbandits.sweeps import Generator, sweep

    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    if scaling not in ("exact", "approximate", "none"):
        raise ValueError(f"scaling must be 'exact', 'approximate' or 'none', got {scaling!r}")
    if isinstance(algorithm, type):
        algorithm = as_algorithm(algorithm)
    reps = int(n_reps if n_reps is not None else SIZES[size])
    probe = algorithm if isinstance(algorithm, Algorithm) and algorithm.fixed_budget else configure(algorithm, deltas[0])
    if probe.fixed_budget:
        raise ValueError(f"{type(probe).__name__} is a fixed-budget algorithm: calibrate checks fixed-confidence "
                         "delta-correctness (compare fixed-budget algorithms with benchmark(..., suite='fixed-budget'))")
    m = probe.top_m
    if m == 1:
        inst_name = "hard_top1"
    elif m == 2:
        inst_name = "classic_topm"
    else:
        raise ValueError(f"calibrate covers best-arm identification (m = 1) and Top-2 (m = 2); got m = {m}")
    if getattr(probe, "sigma", None) is not None:
        import warnings

        warnings.warn(f"{type(probe).__name__} has sigma = {probe.sigma} fixed: it will not follow the noise "
                      "of the grid (leave sigma=None to read it from the instance)", stacklevel=2)
    name = name or name_of(probe)
    version = code_version(probe)
    folder = None if out is None else Path(out) / f"{_slug(name)}_{version}"
    gen = Generator("calibration", lambda k, sigma: cal.calibration_instance(inst_name, sigma),
                    {"sigma": list(sigmas)}, n_instances=1)
    df = sweep({name: algorithm}, gen, deltas=list(deltas), n_reps=reps, key=key, max_steps=int(max_steps),
               out=folder, progress=progress, lower_bound=False, buckets=None, **simulate_kw)
    case = cal.Case(name, inst_name, lambda d: configure(algorithm, d), equivariant=scaling,
                    error_check=not probe.correct_by_construction, max_steps=int(max_steps))
    rows = []
    for delta in deltas:
        runs = {s: df[(df["sigma"] == s) & (df["delta"] == delta)] for s in sigmas}
        unit = runs.get(cal.UNIT_SIGMA)
        lb = cal.lower_bound(inst_name, delta) if m == 1 else None
        for s in sigmas:
            r = runs[s]
            ref = None if unit is None or s == cal.UNIT_SIGMA else unit
            rows.append(cal.calibration_row(
                case, float(s), float(delta), r["samples"].to_numpy(), r["correct"].to_numpy(bool),
                r["stopped"].to_numpy(bool),
                unit_samples=None if ref is None else ref["samples"].to_numpy(),
                unit_capped=False if ref is None else not ref["stopped"].to_numpy(bool).all(),
                lower_bound=lb))
    table = pd.DataFrame(rows)
    table.attrs.update(verdict=verdict(table), algorithm=name, code_version=version, instance=inst_name,
                       n_reps=reps, size=size, scaling=scaling, level=cal.ALPHA, library=library_version(),
                       # what a rerun read back from ``folder`` and the seconds the runs took when computed
                       runs_read_back=df.attrs.get("replications_read_back", 0),
                       runs_computed=df.attrs.get("replications_computed", 0),
                       seconds=df.attrs.get("seconds", 0.0), folder=None if folder is None else str(folder))
    if folder is not None:
        table.to_csv(folder / "calibration.csv", index=False)
        (folder / "calibration.md").write_text(calibration_markdown(table))
        (folder / "metadata.json").write_text(json.dumps(table.attrs, indent=2, default=str))
    return table


CAL_COLUMNS = ["sigma", "delta", "runs", "errors", "capped", "error_rate", "error_CI95", "p_error", "mean", "se",
               "ratio_LB", "p_LB", "ratio_to_unit", "p_scaling", "verdict"]


def calibration_markdown(table) -> str:
    """The calibration table as Markdown, with its overall verdict."""
    a = table.attrs
    head = (f"### Calibration of {a.get('algorithm')} (code {a.get('code_version')}, jaxbandits "
            f"{a.get('library')})\n\n{a.get('n_reps')} runs per row on {a.get('instance')}, scaling check "
            f"{a.get('scaling')}, level {a.get('level'):g} per check.  **Overall: {a.get('verdict')}**\n\n")
    return head + markdown_table(table[[c for c in CAL_COLUMNS if c in table.columns]].to_dict("records"))


# float64 inside the public functions, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), ["calibrate"])
