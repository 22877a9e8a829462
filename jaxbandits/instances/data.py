"""Instances from data: a feature table plus a target vector becomes a linear bandit instance.

The recipe follows the seed papers' real-data experiments:

* seed 002 App. E.2 (Automobile and Electric-Motor data): every feature rescaled to [0, 1],
  K rows (cars) sampled per replication, noisy samples of the target as rewards;
* seed 001 Sec 5 "click-through example" (Yahoo! R6A): theta* fitted by regularized least squares
  with regularization 0.01, X = Z = the rows, K = 40 arms including the best row, the others drawn
  among rows whose gap to it is at least 0.01, Bernoulli rewards (``model="bernoulli"``).

Inputs are duck-typed: anything with ``.to_numpy()`` (a pandas DataFrame), a NumPy array, or the
path of a CSV file (read with :func:`pandas.read_csv`).
"""
from __future__ import annotations

import functools
import os
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxbandits.instances.base import Instance, make_instance

__all__ = ["load_table", "rescale_unit", "ridge_theta", "from_data", "subsample"]


# ------------------------------------------------------------------------------------------------
# reading tables
# ------------------------------------------------------------------------------------------------
def _to_float(a: np.ndarray) -> np.ndarray:
    """Convert an array (possibly of strings/objects) to float, unparsable entries to NaN."""
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        out = np.empty(a.shape, dtype=float)
        for idx, v in np.ndenumerate(a):
            try:
                out[idx] = float(v)
            except (TypeError, ValueError):
                out[idx] = np.nan
        return out


def _read_csv(path, delimiter: str):
    """The table of a CSV file (strings) and its column names; the first row is a header when
    some of its entries are not numbers."""
    import pandas as pd

    try:
        df = pd.read_csv(path, sep=delimiter, header=None, dtype=str, skipinitialspace=True, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: empty CSV file") from None
    except pd.errors.ParserError as e:
        raise ValueError(f"{path}: {e}") from None
    first = df.iloc[0].str.strip()
    if pd.to_numeric(first, errors="coerce").isna().any():
        return df.iloc[1:].to_numpy(object), list(first)
    return df.to_numpy(object), None


def _resolve(col, names, width, what):
    if isinstance(col, (int, np.integer)):
        if not -width <= col < width:
            raise ValueError(f"{what} column index {col} out of range for {width} columns")
        return int(col) % width
    if names is None:
        raise ValueError(f"{what} column {col!r} given by name but the table has no column names")
    if col not in names:
        raise ValueError(f"{what} column {col!r} not found; columns are {list(names)}")
    return names.index(col)


def load_table(data, targets=None, *, columns: Sequence | None = None, target=None,
               delimiter: str = ",", dropna: bool = False):
    """Read a feature table and a target vector as float NumPy arrays.

    Args:
      data: an object with ``.to_numpy()`` (column names taken from ``.columns`` when present), a
        2-D array-like, or a path to a CSV file (a header row is detected when the first row is
        not all numbers).
      targets: the target vector [n], or None to take it from the column ``target``.
      columns: feature columns (names or integer indices); default: every column except
        ``target``.
      target: the target column (name or index) when ``targets`` is None.
      dropna: drop rows with a missing or non-numeric entry in the used columns (otherwise such
        entries raise ``ValueError``).

    Returns:
      ``(features [n, p], targets [n] or None, feature_names or None)``.
    """
    names = None
    if isinstance(data, (str, os.PathLike)):
        table, names = _read_csv(data, delimiter)
    elif hasattr(data, "to_numpy"):
        table = np.asarray(data.to_numpy())
        if hasattr(data, "columns"):
            names = [str(c) if not isinstance(c, str) else c for c in list(data.columns)]
    else:
        table = np.asarray(data)
    if table.ndim == 1:
        table = table[:, None]
    if table.ndim != 2:
        raise ValueError(f"the feature table must be 2-D, got shape {table.shape}")
    width = table.shape[1]

    t_idx = None
    if targets is None and target is not None:
        t_idx = _resolve(target, names, width, "target")
    elif targets is not None and target is not None:
        raise ValueError("give either `targets` (a vector) or `target` (a column), not both")
    if columns is None:
        f_idx = [j for j in range(width) if j != t_idx]
    else:
        f_idx = [_resolve(c, names, width, "feature") for c in columns]
        if t_idx is not None and t_idx in f_idx:
            raise ValueError("the target column is also listed among the feature columns")
    if not f_idx:
        raise ValueError("no feature columns selected")

    X = _to_float(table[:, f_idx])
    y = None
    if t_idx is not None:
        y = _to_float(table[:, t_idx])
    elif targets is not None:
        y = _to_float(np.asarray(targets.to_numpy() if hasattr(targets, "to_numpy") else targets)).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{y.shape[0]} targets for {X.shape[0]} feature rows")
    bad = ~np.all(np.isfinite(X), axis=1)
    if y is not None:
        bad |= ~np.isfinite(y)
    if np.any(bad):
        if not dropna:
            raise ValueError(f"{int(bad.sum())} rows have missing or non-numeric values "
                             f"(first: row {int(np.argmax(bad))}); pass dropna=True to drop them")
        X = X[~bad]
        y = None if y is None else y[~bad]
    fnames = None if names is None else [names[j] for j in f_idx]
    return X, y, fnames


# ------------------------------------------------------------------------------------------------
# preprocessing and fitting
# ------------------------------------------------------------------------------------------------
def rescale_unit(X) -> np.ndarray:
    """Min-max rescale every column of X to [0, 1] (seed 002 App. E.2); constant columns -> 0."""
    X = np.asarray(X, dtype=float)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span


def ridge_theta(X, y, reg: float = 0.01) -> np.ndarray:
    """Regularized least squares argmin_theta ||y - X theta||^2 + reg ||theta||^2
    = (X^T X + reg I)^-1 X^T y (seed 001 Sec 5, click-through example: reg = 0.01)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    A = X.T @ X + reg * np.eye(X.shape[1])
    return np.linalg.solve(A, X.T @ y)


# ------------------------------------------------------------------------------------------------
# subsampling arms (jit/vmap safe)
# ------------------------------------------------------------------------------------------------
@functools.partial(jax.jit, static_argnames=("num_arms", "include_best"))
def subsample(key: jax.Array, instance: Instance, num_arms: int, *, include_best: bool = False,
              min_gap: float = 0.0) -> Instance:
    """K = ``num_arms`` rows of an X = Z instance drawn uniformly without replacement.

    With ``include_best`` the best row (largest x^T theta) is always kept (as arm 0) and the
    others are drawn among rows whose gap to it is at least ``min_gap`` (seed 001's click-through
    example: 40 arms, gap >= 0.01).  jit/vmap safe in ``key`` and ``instance`` (``num_arms``,
    ``include_best`` are static).  If fewer rows are eligible than needed, the draw silently
    includes ineligible ones; :func:`from_data` checks this before calling.
    """
    X = instance.arms
    n = X.shape[0]
    if instance.items.shape != X.shape:
        raise ValueError("subsample needs an instance with items = arms (X = Z)")
    if not 1 <= num_arms <= n:
        raise ValueError(f"cannot draw {num_arms} arms out of {n} rows")
    u = jax.random.uniform(key, (n,))
    if include_best:
        v = instance.arm_means()
        b = jnp.argmax(v)
        eligible = (v <= v[b] - min_gap) & (jnp.arange(n) != b)
        prio = jnp.where(eligible, u, u - 2.0)
        prio = prio.at[b].set(jnp.inf)
    else:
        prio = u
    rows = jax.lax.top_k(prio, num_arms)[1]
    if not include_best:
        rows = jnp.sort(rows)
    Xs = X[rows]
    items = instance.items[rows]
    return Instance(arms=Xs, items=items, theta=instance.theta, noise=instance.noise, model=instance.model)


# ------------------------------------------------------------------------------------------------
# the one entry point
# ------------------------------------------------------------------------------------------------
def from_data(data, targets=None, *, noise: float, columns: Sequence | None = None, target=None,
              rescale: bool = True, intercept: bool = False, reg: float = 0.01, theta=None,
              model: str = "gaussian", num_arms: int | None = None, key: jax.Array | None = None,
              include_best: bool = False, min_gap: float = 0.0, delimiter: str = ",",
              dropna: bool = False) -> Instance:
    """Build a linear bandit instance X = Z from a feature table and a target vector.

    Steps: read the table (:func:`load_table`: DataFrame-like, array or CSV path), rescale every
    feature column to [0, 1] (``rescale``, seed 002 App. E.2), append a constant 1 column
    (``intercept``), fit theta* by regularized least squares on all rows (``reg``, seed 001's
    click-through example uses 0.01; the intercept is regularized like the rest) unless ``theta``
    is given, and optionally keep ``num_arms`` rows drawn with ``key`` (:func:`subsample`; for a
    batch of subsamples call ``from_data`` once without ``key`` and then
    ``batch(subsample, key, n, instance=full, num_arms=K)``).

    The arms' mean rewards are the linear fit x^T theta*, not the raw targets (seed 002 App. E.2
    draws rewards around the raw targets, i.e. a misspecified model; this instance is the best
    linear approximation of it).

    Args:
      data, targets, columns, target, delimiter, dropna: see :func:`load_table`.
      noise: noise standard deviation of the rewards (required: a modelling choice; seed 002
        App. E.2 samples targets from N(p_i, 0.1)).  Ignored by the Bernoulli/logistic models.
      model: ``"gaussian"``, ``"bernoulli"`` (seed 001 click-through) or ``"logistic"``.
      include_best, min_gap: see :func:`subsample`.
    """
    X, y, _ = load_table(data, targets, columns=columns, target=target, delimiter=delimiter,
                         dropna=dropna)
    if X.shape[0] < 2:
        raise ValueError(f"need at least 2 rows, got {X.shape[0]}")
    if rescale:
        X = rescale_unit(X)
    if intercept:
        X = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
    if theta is None:
        if y is None:
            raise ValueError("no targets: pass `targets`, a `target` column, or `theta`")
        theta = ridge_theta(X, y, reg)
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (X.shape[1],):
        raise ValueError(f"theta has shape {theta.shape}, expected ({X.shape[1]},)")
    inst = make_instance(X, theta, noise, model=model)
    if num_arms is None:
        return inst
    if key is None:
        raise ValueError("subsampling num_arms rows needs a PRNG `key`")
    if include_best:
        v = X @ theta
        ok = v <= v.max() - min_gap
        ok[int(np.argmax(v))] = False
        n_ok = int(np.sum(ok))
        if n_ok < num_arms - 1:
            raise ValueError(f"only {n_ok} rows have gap >= {min_gap} to the best row; "
                             f"cannot draw {num_arms - 1} of them")
    return subsample(key, inst, num_arms, include_best=include_best, min_gap=min_gap)

# float64 inside every public function, whatever the caller's x64 setting (jaxbandits.precision)
from jaxbandits.precision import wrap_module as _wrap  # noqa: E402

_wrap(globals(), __all__)
