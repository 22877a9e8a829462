"""Shared pieces of the design solvers: the solution record, design matrices, masks.

Notation (seed 001, Sec 1.2): for a design lambda on the simplex over the arms X [K, d],
A(lambda) = sum_x lambda_x x x^T, and ||y||^2_{A^-1} = y^T A(lambda)^{-1} y.

Rank-deficient arm sets.  When the active arms span only an r-dimensional subspace S of R^d,
A(lambda) is singular.  Every solver then works with A(lambda) + P_perp, where P_perp is the
orthogonal projector onto the complement of S (computed once, from the uniform design on the
active arms, and held constant).  For y in S this gives exactly y^T A(lambda)^+ y (the
pseudo-inverse), so G-optimal values are r (Kiefer-Wolfowitz on S) and XY values are finite when
the items' differences lie in span(X).  Directions with a component outside S are not estimable
(their true value is +inf); they get a finite, meaningless value: do not pass them.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp


class DesignSolution(NamedTuple):
    """Result of a design solver (every field is an array, so it vmaps).

    allocation: [K] design lambda on the simplex (zero outside ``arm_mask``).
    value: objective at ``allocation`` (an upper bound on the optimum).
    gap: certified upper bound on ``value - optimum`` (Frank-Wolfe / duality certificate).
    iterations: number of solver iterations run.
    converged: ``gap <= tol * value`` reached before ``max_iters``.
    """

    allocation: jax.Array
    value: jax.Array
    gap: jax.Array
    iterations: jax.Array
    converged: jax.Array


def as_float(x) -> jax.Array:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def full_mask(mask: Optional[jax.Array], n: int) -> jax.Array:
    """Boolean mask of length n (all True when ``mask`` is None)."""
    if mask is None:
        return jnp.ones((n,), bool)
    return jnp.asarray(mask, bool)


def initial_design(mask: jax.Array, init: Optional[jax.Array], dtype) -> jax.Array:
    """Uniform design on the active arms, or ``init`` restricted to them and renormalised.

    A warm start with no mass on the active arms (or a non-finite one) falls back to uniform.
    """
    uniform = mask.astype(dtype) / jnp.maximum(jnp.sum(mask), 1)
    if init is None:
        return uniform
    lam = jnp.where(mask, jnp.clip(jnp.asarray(init, dtype), 0.0, None), 0.0)
    s = jnp.sum(lam)
    ok = jnp.isfinite(s) & (s > 0)
    # Mix a little uniform mass in so a warm start supported on a non-spanning subset still
    # gives an invertible design (Frank-Wolfe can then remove it with away / drop steps).
    lam = jnp.where(ok, lam / jnp.where(ok, s, 1.0), uniform)
    return jnp.where(ok, 0.999 * lam + 0.001 * uniform, uniform)


def design_matrix(lam: jax.Array, X: jax.Array) -> jax.Array:
    """A(lambda) = sum_x lambda_x x x^T [d, d]."""
    return (X * lam[:, None]).T @ X


def null_projector(X: jax.Array, mask: jax.Array, rtol: float = 1e-9):
    """(P_perp, r): projector onto span(active arms)^perp and the rank r of the active arms.

    Computed from the uniform design on the active arms; not differentiated (the span is a
    discrete property; gradients are taken on the span).
    """
    X = jax.lax.stop_gradient(X)
    w = mask.astype(X.dtype)
    A = design_matrix(w / jnp.maximum(jnp.sum(w), 1.0), X)
    evals, evecs = jnp.linalg.eigh(A)
    keep = evals > rtol * jnp.maximum(jnp.max(evals), jnp.finfo(X.dtype).tiny)
    perp = (evecs * (~keep).astype(X.dtype)) @ evecs.T
    return perp, jnp.sum(keep)


def inverse_design(lam: jax.Array, X: jax.Array, perp: jax.Array) -> jax.Array:
    """(A(lambda) + P_perp + eps I)^{-1}, symmetric, via Cholesky (for d <= :data:`SMALL_DIM` the
    unrolled factor and substitutions of :func:`small_inverse_factor`: no solver call under ``vmap``).

    eps = 1e-13 tr(A) / d keeps designs whose support does not span (optimal c-/minimax designs
    can be singular: one direction needs a single arm) invertible; directions outside the range of
    A(lambda) then get a huge (~1e13) value instead of inf, and values inside it are exact to ~1e-13.
    """
    A = add_jitter(design_matrix(lam, X) + perp)
    if A.shape[0] <= SMALL_DIM:
        Linv = small_inverse_factor(A)
    else:
        L = jnp.linalg.cholesky(A)
        Linv = jax.scipy.linalg.solve_triangular(L, jnp.eye(A.shape[0], dtype=A.dtype), lower=True)
    return Linv.T @ Linv


#: largest dimension d for which :func:`small_cholesky` and its solves run as unrolled scalar
#: arithmetic (O(d^3) scalar operations per lane; above it, the library calls)
SMALL_DIM = 8


def ordered_sum(terms):
    """Sum of a non-empty sequence of arrays in a fixed left-to-right order (no reduction whose
    order XLA picks)."""
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def first_max(values):
    """(index, value) of the largest of a non-empty list of arrays of one shape, elementwise, as
    ``jnp.argmax`` / ``jnp.max`` pick them (the first on ties, the first NaN if any): a chain of
    compares and selects, so under ``vmap`` no reduction over the list's axis."""
    best, j = values[0], jnp.zeros(jnp.shape(values[0]), jnp.int32)
    for k, v in enumerate(values[1:], 1):
        take = (v > best) | (jnp.isnan(v) & ~jnp.isnan(best))
        best, j = jnp.where(take, v, best), jnp.where(take, k, j)
    return j, best


class Entries:
    """A square matrix held as nested lists of scalars (``rows[i][j]``), indexable as ``A[i, j]``
    for :func:`small_cholesky` (the entry-by-entry forms: a d x d matrix whose entries are
    separate arrays, one a lane under ``vmap``)."""

    def __init__(self, rows):
        self.rows = rows
        self.shape = (len(rows), len(rows))

    def __getitem__(self, ij):
        return self.rows[ij[0]][ij[1]]


def small_cholesky(A: jax.Array):
    """(L, r): the lower Cholesky factor of a small symmetric positive-definite A [d, d] as nested
    lists of scalars (``L[i][j]``, j <= i) and the reciprocals r[j] = 1 / L[j][j].

    Column by column (Cholesky-Banachiewicz), every entry a scalar expression, so under ``vmap``
    the factorisation and the solves below are elementwise over the lanes: XLA fuses them into one
    kernel instead of a library call per factor and per solve (on a GPU: cuSOLVER's potrf and
    cuBLAS's trsm, each a launch of its own).  A matrix that is not positive definite gives NaN, as
    :func:`jax.numpy.linalg.cholesky` does.  For d <= :data:`SMALL_DIM`."""
    d = A.shape[-1]
    L = [[None] * d for _ in range(d)]
    r = [None] * d
    for j in range(d):
        s = A[j, j] - ordered_sum([L[j][k] * L[j][k] for k in range(j)]) if j else A[j, j]
        L[j][j] = jnp.sqrt(s)
        r[j] = 1.0 / L[j][j]
        for i in range(j + 1, d):
            s = A[i, j] - ordered_sum([L[i][k] * L[j][k] for k in range(j)]) if j else A[i, j]
            L[i][j] = s * r[j]
    return L, r


def small_forward(L, r, y) -> list:
    """z with L z = y (forward substitution), for :func:`small_cholesky`'s factor; y [d]."""
    z = []
    for i in range(len(r)):
        s = y[i] - ordered_sum([L[i][k] * z[k] for k in range(i)]) if i else y[i]
        z.append(s * r[i])
    return z


def small_backward(L, r, z) -> list:
    """u with L^T u = z (back substitution), for :func:`small_cholesky`'s factor; z a list of d."""
    d = len(r)
    u = [None] * d
    for i in reversed(range(d)):
        s = z[i] - ordered_sum([L[k][i] * u[k] for k in range(i + 1, d)]) if i < d - 1 else z[i]
        u[i] = s * r[i]
    return u


def small_inverse_factor(A: jax.Array) -> jax.Array:
    """L^{-1} [d, d] for the lower Cholesky factor L of a small symmetric positive-definite A
    (symmetrised first, as :func:`jax.numpy.linalg.cholesky` does): :func:`small_cholesky` and
    forward substitution of the identity's columns, unrolled scalar arithmetic (no solver call
    under ``vmap``).  For d <= :data:`SMALL_DIM`."""
    d = A.shape[-1]
    L, r = small_cholesky(0.5 * (A + A.T))
    eye = jnp.eye(d, dtype=A.dtype)
    return jnp.stack(small_forward(L, r, [eye[i] for i in range(d)]))


def small_pivots_exceed(A: jax.Array, tol) -> jax.Array:
    """Whether every pivot of the elimination of a small symmetric positive semi-definite A [d, d]
    (no pivoting, unrolled scalar arithmetic as :func:`small_cholesky`) exceeds ``tol`` >= 0.

    The pivots of a PSD matrix lie in [lambda_min, lambda_max] and their product is det A, so a
    rank-deficient A has a pivot at rounding level and a well-conditioned one none below
    lambda_min: with ``tol`` a small multiple of A's scale this is a rank test that fuses into a
    step's kernels under ``vmap`` (an eigendecomposition is a solver call of its own on a GPU).  A
    pivot at or below ``tol`` is replaced by 1 for the rest of the elimination (the answer is
    already False).  For d <= :data:`SMALL_DIM`."""
    d = A.shape[-1]
    S = [[A[i, j] for j in range(i + 1)] for i in range(d)]  # the lower triangle
    ok = jnp.ones((), bool)
    for k in range(d):
        good = S[k][k] > tol
        ok = ok & good
        r = 1.0 / jnp.where(good, S[k][k], 1.0)
        for i in range(k + 1, d):
            f = S[i][k] * r
            for j in range(k + 1, i + 1):
                S[i][j] = S[i][j] - f * S[j][k]
    return ok


def add_jitter(A: jax.Array, trace=None) -> jax.Array:
    """A + eps I, eps = 1e-13 tr(A) / d: the relative jitter of :func:`inverse_design` (and of the
    c-optimal and App F solvers) that keeps a design singular on its support invertible.  ``trace``:
    tr(A) when the caller has it (None: ``jnp.trace``)."""
    d = A.shape[0]
    tr = jnp.trace(A) if trace is None else trace
    return A + (1e-13 * tr / d) * jnp.eye(d, dtype=A.dtype)


def pair_table(rows, cols, fn) -> jax.Array:
    """[R, C] table sum_k fn([r[k, i] - c[k, j] for (r, c) in zip(rows, cols)], k), for
    coordinates-first arrays r [d, R] and c [d, C]: a function of row - column differences,
    summed over the d coordinates.

    Differences first, then one elementwise sum in a fixed coordinate order: no cancellation
    between large common components (as in ||a||^2 + ||b||^2 - 2 a.b for close a, b) and no matrix
    product whose summation order XLA picks by shape, so an entry is the same bit for bit whatever
    the table's size, the lanes' batch or the device count (docs/design.md, Numerics).
    """
    d = rows[0].shape[0]
    if d > 64:  # one reduction instead of a long unrolled chain (same differences-first values)
        ks = jnp.arange(d)[:, None, None]
        return jnp.sum(fn([r[:, :, None] - c[:, None, :] for r, c in zip(rows, cols)], ks), axis=0)
    out = None
    for k in range(d):
        term = fn([r[k][:, None] - c[k][None, :] for r, c in zip(rows, cols)], k)
        out = term if out is None else out + term
    return out


def quad_norms(V: jax.Array, Ainv: jax.Array) -> jax.Array:
    """||v||^2_{A^-1} for every row of V [n, d]."""
    return jnp.sum((V @ Ainv) * V, axis=-1)


def masked_argmax(v: jax.Array, mask: jax.Array) -> jax.Array:
    """Index of the largest entry of v among mask (first one on ties)."""
    v = jnp.where(mask, v, -jnp.inf)
    m = jnp.max(v)
    idx = jnp.arange(v.shape[0])
    return jnp.min(jnp.where(v == m, idx, v.shape[0]))


def masked_argmin(v: jax.Array, mask: jax.Array) -> jax.Array:
    return masked_argmax(-v, mask)


def oracle_directions(Z, theta, item_mask):
    """Directions (z* - z) / |(z* - z)^T theta| for active z != z* (seed 001 eq. (1))."""
    vals = Z @ theta
    star = masked_argmax(vals, item_mask)
    diff = Z[star][None, :] - Z
    gaps = diff @ theta
    ym = item_mask & (jnp.arange(Z.shape[0]) != star)
    safe = jnp.where(ym & (gaps > 0), gaps, 1.0)
    Y = diff / safe[:, None]
    # a tie with z* (gap 0) makes psi* infinite; keep it as a direction of huge weight
    Y = jnp.where((ym & (gaps <= 0))[:, None], diff * 1e150, Y)
    return Y, ym
