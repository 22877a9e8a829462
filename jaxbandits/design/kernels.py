"""Fused loops: a fixed-trip loop over one lane's small arrays as a single GPU kernel.

Under ``vmap`` over hundreds of thousands of lanes, XLA runs a loop iteration of a design solver as
a chain of kernels (a reduction, a gather or a product each), and every kernel reads the lane's
matrices from device memory and writes them back.  A Frank-Wolfe iteration on a 16 x 16 design is
about 10 kernels and 30 KB of memory traffic a lane that way.  :func:`fused_fori_loop` instead
lowers the whole loop, all its trips, into one Pallas kernel (Triton) in which a program holds
one lane's arrays in registers: one launch and one read and write of the carry per loop.

The loop body is ordinary ``jax.numpy`` on unbatched arrays.  The same body runs

* ``kernels="xla"``: as ``jax.lax.fori_loop`` (the CPU program, and any backend);
* ``kernels="triton"``: as one ``pallas_call`` compiled by XLA's Triton pipeline (GPUs; the
  engine's accelerator policy, :func:`jaxbandits.batching.solve_for`);
* ``kernels="interpret"``: as the same ``pallas_call`` run by Pallas's interpreter on any backend,
  which checks on a CPU that the kernel's program computes the loop's results.

Each iteration computes the same operations in the same order in all three.  They round alike
where a body reduces only exactly (``max``, ``min``, sums with a single nonzero term) and adds no
product to anything: XLA:CPU contracts ``a * b + c`` into a fused multiply-add where XLA:GPU and
Triton round the product first, so such a pair can differ in its last bit between a CPU and a GPU
(Peace's design avoids it; the entry-by-entry bodies of Top Two and FWS, loops on scalars run as
:func:`jaxbandits.batching.fused_entries` kernels, a block of lanes a program, do not, and give
the same replications).  The body's arrays must have power-of-two dimensions (Triton's blocks):
the caller pads.  Under ``vmap`` Pallas adds the lanes as the kernel's grid, one program a lane.
:func:`gated_kernel` is one program a lane for a body that only some lanes need in a step (the
others copy their carry, or, in place, do nothing); :func:`lane_program` one program a lane for any
computation whose intermediate tables need never leave the program (XY-adaptive's step builds its
table there and pulls on it).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxbandits.batching import KERNELS, LANE_BLOCK, fused_elementwise  # noqa: F401 (re-exported)


def check_kernels(kernels: str) -> None:
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")


def power_of_two(n: int) -> int:
    """The smallest power of two >= ``n`` (>= 1)."""
    return 1 << max(0, int(n) - 1).bit_length()


def fused_fori_loop(trips: int, body: Callable, carry: tuple, consts: tuple = (), *, kernels: str = "xla",
                    num_warps: int = 1, unroll: int = 1, max_trips: int | None = None):
    """``lax.fori_loop(0, trips, lambda i, c: body(i, c, *consts), carry)``, fused on request.

    ``carry`` and ``consts``: tuples of arrays whose dimensions are powers of two (0-d arrays are
    allowed; booleans are not: pass them as integers).  ``body(i, carry, *consts)`` returns the
    new carry (same shapes and dtypes); ``i`` is an int32 counter from 0.  ``trips``: a Python
    int, or (fused kernels only) a traced int32 scalar of at most ``max_trips`` (a Python int),
    per lane under ``vmap``: a program then runs its own lane's trips (``max_trips`` trips of which
    those past its count branch over the body, inside the kernel), and a lane whose result is not
    needed can run none.  ``kernels``
    as in the module docstring; ``num_warps``: the Triton program's warps (one lane's arrays are
    small: one warp keeps them in registers).

    ``unroll``: the XLA loop's unrolling (the same iterates).  A loop on scalars (every carry and
    const a scalar, the body elementwise in them) runs a block of lanes a program as a
    ``fori_loop`` inside :func:`jaxbandits.batching.fused_entries` (one lane a program would leave
    31 of a warp's 32 threads idle).
    """
    check_kernels(kernels)
    carry, consts = tuple(jnp.asarray(c) for c in carry), tuple(jnp.asarray(c) for c in consts)
    if kernels == "xla":
        if not isinstance(trips, int):
            raise TypeError("fused_fori_loop: a traced trip count needs a fused kernel (a loop of XLA "
                            "operations would wait on the lanes' largest count)")
        return jax.lax.fori_loop(0, trips, lambda i, c: body(jnp.asarray(i, jnp.int32), c, *consts), carry,
                                 unroll=int(unroll))
    dynamic = not isinstance(trips, int)
    if dynamic:
        if not isinstance(max_trips, int):
            raise TypeError("fused_fori_loop: a traced trip count needs max_trips, a Python int")
        consts = consts + (jnp.asarray(trips, jnp.int32),)
    _check_blocks("fused_fori_loop", "carry", carry)
    _check_blocks("fused_fori_loop", "consts", consts)
    n_carry = len(carry)

    def run(*vals):
        c0, k = tuple(vals[:n_carry]), tuple(vals[n_carry:])
        if dynamic:
            n, k = k[-1], k[:-1]
            step = lambda i, c: jax.lax.cond(i < n, lambda c: tuple(body(i, c, *k)), lambda c: c, c)  # noqa: E731
            return jax.lax.fori_loop(0, max_trips, lambda i, c: step(jnp.asarray(i, jnp.int32), c), c0)
        return jax.lax.fori_loop(0, trips, lambda i, c: tuple(body(jnp.asarray(i, jnp.int32), c, *k)), c0)

    return lane_program(run, carry, carry + consts, kernels=kernels, num_warps=num_warps)


def _check_blocks(who: str, name: str, arrays) -> None:
    """Triton's blocks: no booleans, every dimension a power of two."""
    for a in arrays:
        if a.dtype == jnp.bool_:
            raise TypeError(f"{who}: boolean {name} arrays are not supported; pass integers")
        if any(s != power_of_two(s) for s in a.shape):
            raise ValueError(f"{who}: every dimension must be a power of two, got a {name} array of shape {a.shape}")


def lane_program(run: Callable, out_like: tuple, args: tuple, *, kernels: str, num_warps: int = 1) -> tuple:
    """``run(*args)`` as one Pallas kernel (``kernels`` "triton" or "interpret"): under ``vmap`` one
    program a lane, which loads ``args`` (0-d arrays as scalars), runs ``run`` on them (any
    computation, loops included) and stores its results, arrays shaped and typed like ``out_like``.
    Arrays have power-of-two dimensions and no booleans.  Where a loop needs a carry that no caller
    reads (tables a step builds and updates), the program keeps it in registers: only the results
    move.  :func:`fused_fori_loop` is one."""
    check_kernels(kernels)
    if kernels == "xla":
        raise ValueError("lane_program: kernels must be 'triton' or 'interpret', got 'xla'")
    args, out_like = tuple(jnp.asarray(a) for a in args), tuple(jnp.asarray(a) for a in out_like)
    _check_blocks("lane_program", "argument", args)
    _check_blocks("lane_program", "result", out_like)
    shapes = [a.shape for a in args]

    def kernel(*refs):
        ins, outs = refs[:len(args)], refs[len(args):]
        new = run(*[r[...].reshape(()) if sh == () else r[...] for r, sh in zip(ins, shapes)])
        for ref, v in zip(outs, new):
            ref[...] = jnp.reshape(v, (1,)) if jnp.ndim(v) == 0 else v

    return _lane_call(kernel, out_like, args, kernels, num_warps)


def _as_1d(a: jax.Array) -> jax.Array:
    return a.reshape((1,)) if a.shape == () else a


def _lane_call(kernel, carry: tuple, args: tuple, kernels: str, num_warps: int, in_place: bool = False) -> tuple:
    """``kernel`` as a ``pallas_call`` on ``args`` (0-d arrays as [1]) whose outputs have the shapes
    of ``carry``, interpreted or through Triton; the outputs with ``carry``'s shapes.  ``in_place``:
    output i is input i's buffer (``input_output_aliases``), so that an output the kernel does not
    write keeps the input's value."""
    from jax.experimental import pallas as pl

    out_shape = tuple(jax.ShapeDtypeStruct(_as_1d(c).shape, c.dtype) for c in carry)
    aliases = {i: i for i in range(len(carry))} if in_place else {}
    if kernels == "interpret":
        call = pl.pallas_call(kernel, out_shape=out_shape, interpret=True, input_output_aliases=aliases)
    else:
        from jax.experimental.pallas import triton as plt

        call = pl.pallas_call(kernel, out_shape=out_shape, input_output_aliases=aliases,
                              compiler_params=plt.CompilerParams(num_warps=int(num_warps), num_stages=1))
    out = call(*(_as_1d(a) for a in args))
    return tuple(o.reshape(()) if c.shape == () else o for o, c in zip(out, carry))


def gated_kernel(run: Callable, carry: tuple, consts: tuple, go, *, kernels: str, num_warps: int = 1,
                 in_place: bool = False) -> tuple:
    """``run(*carry, *consts)`` where ``go`` holds, ``carry`` elsewhere, as one Pallas kernel
    (``kernels`` "triton" or "interpret"): under ``vmap`` one program a lane, in which a lane whose
    ``go`` is False only copies its carry and reads nothing else.  ``run`` sees unbatched arrays (0-d
    ones as scalars) and returns the new carry (same shapes and dtypes); arrays have power-of-two
    dimensions and no booleans (:func:`fused_fori_loop`).  ``num_warps``: the Triton program's.

    ``in_place``: the outputs are the carry's own buffers (``input_output_aliases``), and a lane
    whose ``go`` is False reads and writes nothing at all.  Inside a loop whose carry holds these
    arrays (the engine's, for a state that the step leaves in place) XLA then updates them in place:
    a step costs memory traffic only for the lanes that run, where a copy would move every lane's
    carry.  A carry array still read after the call would have to be copied first: XLA does that
    by itself, at a copy's cost."""
    from jax.experimental import pallas as pl

    if kernels not in ("triton", "interpret"):
        raise ValueError(f"kernels must be 'triton' or 'interpret' for a fused kernel, got {kernels!r}")
    carry, consts = tuple(jnp.asarray(c) for c in carry), tuple(jnp.asarray(c) for c in consts)
    n, m = len(carry), len(consts)
    scalar = [a.shape == () for a in carry + consts]

    def kernel(*refs):
        ins, outs = refs[:n + m + 1], refs[n + m + 1:]

        if not in_place:
            @pl.when(ins[-1][...][0] == 0)
            def _():
                for i, o in zip(ins[:n], outs):
                    o[...] = i[...]

        @pl.when(ins[-1][...][0] != 0)
        def _():
            vals = [r[...][0] if s else r[...] for r, s in zip(ins[:n + m], scalar)]
            new = run(*vals)
            for ref, a in zip(outs, new):
                ref[...] = jnp.reshape(a, (1,)) if jnp.ndim(a) == 0 else a

    return _lane_call(kernel, carry, carry + consts + (jnp.asarray(go).astype(jnp.int32),), kernels, num_warps,
                      in_place)


# Small-matrix arithmetic a fused loop's body can use: Triton has no gather and no small matrix
# product, so a column is a masked sum (of one nonzero term: exact) and a product a loop of outer
# products, in index order.

def iota(n: int) -> jax.Array:
    return jax.lax.broadcasted_iota(jnp.int32, (n,), 0)


def column(A: jax.Array, k) -> jax.Array:
    """A[:, k] for a traced k (exact: a sum with one nonzero term)."""
    return jnp.sum(jnp.where(iota(A.shape[1])[None, :] == k, A, 0.0), axis=1)


def row(A: jax.Array, k) -> jax.Array:
    """A[k, :] for a traced k (exact)."""
    return jnp.sum(jnp.where(iota(A.shape[0])[:, None] == k, A, 0.0), axis=0)


def entry(v: jax.Array, k) -> jax.Array:
    """v[k] for a traced k (exact)."""
    return jnp.sum(jnp.where(iota(v.shape[0]) == k, v, 0.0))


def element(A: jax.Array, i, j) -> jax.Array:
    """A[i, j] for traced or static indices (exact)."""
    return entry(row(A, i), j)


def first_argmax(v: jax.Array, mask=None) -> jax.Array:
    """The first index of the largest entry of v (among ``mask``; v's length where none equals
    the maximum, a NaN): :func:`jaxbandits.design.core.masked_argmax` without a gather."""
    if mask is not None:
        v = jnp.where(mask, v, -jnp.inf)
    return jnp.min(jnp.where(v == jnp.max(v), iota(v.shape[0]), v.shape[0]))


def dot_columns(cols, u) -> jax.Array:
    """sum_i cols[i] u[i], added in column order (:func:`jaxbandits.batching.columns_dot` of the
    matrix whose columns are ``cols``, a list of arrays or scalars); ``u`` a vector or a list of
    scalars."""
    at = (lambda i: u[i]) if isinstance(u, (list, tuple)) else (lambda i: entry(u, i))
    out = cols[0] * at(0)
    for i in range(1, len(cols)):
        out = out + cols[i] * at(i)
    return out


def pick_row(cols, j, n: int) -> jax.Array:
    """The [n] vector (cols[0][j], cols[1][j], ..., 0, ...): row j of the matrix whose columns are
    ``cols``, padded with zeros (exact)."""
    ids = iota(n)
    out = jnp.where(ids == 0, entry(cols[0], j), 0.0)
    for a in range(1, len(cols)):
        out = out + jnp.where(ids == a, entry(cols[a], j), 0.0)
    return out


def matmul(A: jax.Array, B: jax.Array) -> jax.Array:
    """A @ B as sum_l A[:, l] B[l, :], in the order l = 0, 1, ..."""
    return jax.lax.fori_loop(0, A.shape[1], lambda l, C: C + column(A, l)[:, None] * row(B, l)[None, :],
                             jnp.zeros((A.shape[0], B.shape[1]), A.dtype))


def matmul_t(A: jax.Array, B: jax.Array) -> jax.Array:
    """A @ B^T as sum_l A[:, l] B[:, l]^T, in the order l = 0, 1, ..."""
    return jax.lax.fori_loop(0, A.shape[1], lambda l, C: C + column(A, l)[:, None] * column(B, l)[None, :],
                             jnp.zeros((A.shape[0], B.shape[0]), A.dtype))


def gauss_jordan_inverse(A: jax.Array) -> jax.Array:
    """A^-1 by Gauss-Jordan elimination in place, without pivoting (pivots in order 0, 1, ...):
    for a symmetric positive-definite A every pivot is positive and the elimination is stable, as
    Cholesky's is.  A singular A gives infinities or NaN, as an inversion does."""
    n = A.shape[0]
    ids = iota(n)

    def sweep(p, A):
        r, c = row(A, p), column(A, p)
        r1 = jnp.where(ids == p, 1.0, r) / entry(r, p)          # the pivot row, divided by the pivot
        rest = jnp.where(ids[None, :] == p, 0.0, A) - c[:, None] * r1[None, :]
        return jnp.where(ids[:, None] == p, r1[None, :], rest)

    return jax.lax.fori_loop(0, n, sweep, A)


__all__ = ["KERNELS", "LANE_BLOCK", "check_kernels", "column", "dot_columns", "element", "entry", "first_argmax",
           "fused_elementwise", "fused_fori_loop", "gated_kernel", "gauss_jordan_inverse", "matmul", "matmul_t",
           "pick_row", "power_of_two", "row"]
