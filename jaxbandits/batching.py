"""Batching tools shared by the kernels, and the execution policy the engine traces them under.

:func:`solve_where` runs an expensive function (a design solve) only on the lanes that need it.
How those lanes are served is a property of the device, not of the algorithm:

* on XLA:CPU, one lane after another (``capacity`` = 1: the first lane left, solved unbatched on
  its own slices, until none is left): batched
  Cholesky / triangular solves inside a solver are far slower on a CPU than a loop over unbatched
  ones (measured ~100x at d = 2);
* on an accelerator, all flagged lanes at once (``vmap`` over a buffer of up to every lane): a GPU
  step is a chain of kernel launches, so serving lanes one by one serialises the whole batch
  (measured on an H100: LT&S at K = 1000 went from 16 to 1,459 replications per second when its
  solves were batched across 4096 lanes).

The policy is a static field of the algorithm's configuration
(:attr:`jaxbandits.algorithms.base.Algorithm.batching`), set by the engine from the device and the
lanes; the algorithm's contract methods run under it (:func:`policy`, entered by
:func:`jaxbandits.algorithms.base.under_own_policy`), so the kernels call :func:`solve_where`
without choosing and a caller's context never reaches them; an explicit ``capacity`` /
``batched_solve`` argument still wins.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from typing import Callable

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap


#: the forms of a loop that has a fused kernel (:mod:`jaxbandits.design.kernels`)
KERNELS = ("xla", "triton", "interpret")


@dataclasses.dataclass(frozen=True)
class SolvePolicy:
    """How :func:`solve_where` serves flagged lanes under ``vmap``.

    Attributes:
      batched: ``vmap`` the solve over the gathered lanes (accelerators) instead of ``lax.map``
        over them one at a time (CPU).
      capacity: lanes gathered per round of the serving loop (``None``: every lane of the batch).
      kernels: how the loops that have a fused form run (:mod:`jaxbandits.design.kernels`): "xla"
        (XLA operations, every backend), "triton" (one Pallas kernel a loop, GPUs) or "interpret"
        (that kernel interpreted: the GPU's program checked on a CPU).
      per_step: the code traced is a step of the engine's loop (True) or runs once a replication
        (False: :meth:`jaxbandits.rules.composition.Composition.init`), where a rule's
        step-fused form (:mod:`jaxbandits.rules.entrywise`) would only cost compile time.
    """

    batched: bool = False
    capacity: int | None = 1
    kernels: str = "xla"
    per_step: bool = True

    def __post_init__(self):
        if self.kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {self.kernels!r}")


_POLICY: contextvars.ContextVar[SolvePolicy] = contextvars.ContextVar("jaxbandits_solve_policy",
                                                                     default=SolvePolicy())


def current_policy() -> SolvePolicy:
    return _POLICY.get()


@contextlib.contextmanager
def policy(p: SolvePolicy):
    """Trace the code in this block under ``p`` (the engine wraps its lowering in it)."""
    token = _POLICY.set(p)
    try:
        yield p
    finally:
        _POLICY.reset(token)


@contextlib.contextmanager
def once_per_replication():
    """Trace the code in this block as code that runs once a replication (``per_step`` False)."""
    with policy(dataclasses.replace(current_policy(), per_step=False)) as p:
        yield p


def solve_for(platform: str, lanes: int) -> SolvePolicy:
    """The default policy on a device platform: one lane at a time on CPU, every lane at once
    elsewhere, and fused loops as Triton kernels on GPUs."""
    if platform == "cpu":
        return SolvePolicy(batched=False, capacity=1)
    return SolvePolicy(batched=True, capacity=max(1, int(lanes)), kernels="triton" if platform == "gpu" else "xla")


def solve_where(pred: jax.Array, fn: Callable, args, old, capacity: int | None = None,
                batched_solve: bool | None = None, bucket_factor: int | None = None):
    """``fn(*args)`` where ``pred`` holds, ``old`` elsewhere; under ``vmap`` only the lanes with
    ``pred`` run ``fn``.

    Unbatched it is ``lax.cond``.  Batched (``custom_vmap``), the lanes with ``pred`` are gathered
    ``capacity`` at a time (``jnp.nonzero(size=capacity)``), the solver runs on that buffer and the
    results are scattered back; a ``while_loop`` repeats until every such lane is served, so it
    runs zero times on steps where no lane needs ``fn``.  When the solver is batched and the
    capacity holds every lane (the accelerator policy), there is no loop: one pass on the smallest
    of a few buffer sizes (powers of ``SOLVE_BUCKET_FACTOR``) holding the flagged lanes, so a step
    where few lanes solve pays for few solves.  The solver is ``vmap(fn)`` when
    ``batched_solve``, else ``lax.map`` (one lane after the other, each unbatched; with ``capacity``
    1 the lane is solved on its own slices, with no buffer).  ``capacity``
    and ``batched_solve`` default to the :func:`current_policy` at trace time.  ``bucket_factor``:
    the growth of the one-pass buffer sizes (default ``SOLVE_BUCKET_FACTOR``); every size is a
    copy of the solver in the compiled program, so a solver that is cheap per lane (launch-bound
    on a GPU up to far more lanes than it has) compiles faster with fewer sizes.  Results are
    identical to the ``cond`` version (tested).  ``fn`` must return a pytree with the structure of
    ``old``; everything it reads must be in ``args`` (the batching rule cannot see batched values
    closed over).
    """
    pol = current_policy()
    batched_solve = pol.batched if batched_solve is None else bool(batched_solve)
    capacity = pol.capacity if capacity is None else capacity
    leaves, treedef = jax.tree.flatten(args)
    old_leaves, old_def = jax.tree.flatten(old)
    n_in = len(leaves)

    def f_flat(*flat):
        a = jax.tree.unflatten(treedef, list(flat[:n_in]))
        return jax.tree.leaves(fn(*a))

    @custom_vmap
    def run(p, *flat):
        o = list(flat[n_in:])
        return jax.lax.cond(p, lambda: f_flat(*flat[:n_in]), lambda: o)

    @run.def_vmap
    def _rule(axis_size, in_batched, p, *flat):
        p_b, flat_b = in_batched[0], in_batched[1:]
        p = p if p_b else jnp.broadcast_to(p, (axis_size,))
        ins, outs = list(flat[:n_in]), list(flat[n_in:])
        ins_b = list(flat_b[:n_in])
        outs = [o if b else jnp.broadcast_to(o, (axis_size,) + o.shape) for o, b in zip(outs, flat_b[n_in:])]
        C = axis_size if capacity is None else min(int(capacity), axis_size)
        if batched_solve:
            solver = jax.vmap(f_flat, in_axes=tuple(0 if b else None for b in ins_b))
        else:
            def solver(*a):
                xs = tuple(x for x, b in zip(a, ins_b) if b)

                def one(xs_):
                    it = iter(xs_)
                    return f_flat(*[next(it) if b else x for x, b in zip(a, ins_b)])
                return jax.lax.map(one, xs)

        def chunk(carry):
            res, served = carry
            todo = p & ~served
            idx = jnp.nonzero(todo, size=C, fill_value=axis_size)[0]
            valid = idx < axis_size
            safe = jnp.where(valid, idx, 0)
            got = solver(*[a[safe] if b else a for a, b in zip(ins, ins_b)])
            tgt = jnp.where(valid, idx, axis_size)  # out of bounds: dropped
            res = [r.at[tgt].set(g.astype(r.dtype), mode="drop") for r, g in zip(res, got)]
            return res, served.at[tgt].set(True, mode="drop")

        if batched_solve and C >= axis_size:
            return _one_pass(p, ins, ins_b, outs, solver, axis_size, bucket_factor), [True] * len(outs)
        if C == 1 and not batched_solve:
            # one lane at a time (the CPU policy): the first lane left is solved unbatched on its own
            # slices, with no gather buffer, no lax.map and no out-of-bounds scatter
            def one_lane(carry):
                res, todo = carry
                i = jnp.argmax(todo)
                got = f_flat(*[a[i] if b else a for a, b in zip(ins, ins_b)])
                res = [r.at[i].set(g.astype(r.dtype)) for r, g in zip(res, got)]
                return res, todo.at[i].set(False)
            res, _ = jax.lax.while_loop(lambda c: jnp.any(c[1]), one_lane, (outs, p))
            return res, [True] * len(res)
        res, _ = jax.lax.while_loop(lambda c: jnp.any(p & ~c[1]), chunk, (outs, jnp.zeros((axis_size,), bool)))
        return res, [True] * len(res)

    out = run(jnp.asarray(pred, bool), *leaves, *old_leaves)
    return jax.tree.unflatten(old_def, out)


def fixed_trip_while(cond: Callable, body: Callable, init, max_iters: int):
    """``lax.while_loop(cond, body, init)`` run as a loop of exactly ``max_iters`` iterations
    (a static trip count), where an iteration whose ``cond`` fails leaves the carry unchanged.

    The result is the ``while_loop``'s whenever that loop stops within ``max_iters`` iterations
    (``cond`` should itself bound the count, so that both always agree).  On an accelerator a
    ``while_loop`` whose trip count depends on data copies its predicate to the host every
    iteration, and under ``vmap`` it runs until the slowest lane is done anyway; this loop asks the
    host nothing.  The carry should report convergence (an iteration count, a residual) where
    the caller needs it.
    """
    def step(_, c):
        go = cond(c)
        new = body(c)
        return jax.tree.map(lambda a, b: jnp.where(go, a, b), new, c)

    return jax.lax.fori_loop(0, int(max_iters), step, init)


def split_chain(key: jax.Array, n: int, parts: int, carry: int = 0, block: int = 8) -> list[jax.Array]:
    """The subkeys of ``n`` iterations of a split chain, stacked [n, ...]: iteration i splits the
    chain's key into ``parts`` keys (``jax.random.split``), key ``carry`` of them continues the
    chain and the others, in order, are iteration i's subkeys (one stack each, ``parts - 1`` in
    all).  Bit for bit the keys of the Python loop over the ``n`` iterations.

    That loop, unrolled, is a chain of ``n`` dependent threefry hashes that XLA fuses, and copies,
    into a few very large kernels: compiling them is most of an H100 compile of a program that
    draws a fixed-trip binomial (``n`` = 64; measured with ``benchmarks/gpu_model.py``, XY-static's
    program compiles in 24 s instead of 69 s with the chains of ``environment.binomial`` in blocks
    of 8, docs/measurements/2026-11-28-study-predictions.md).  Here the chain runs in blocks of
    ``block`` iterations: a
    ``scan`` of ceil(n / block) trips carries the key from block to block (a trip count known
    when compiling, no host round trip), then the keys of every block are expanded from its
    first key at once (``vmap``), so the program holds 2 ``block`` hashes, not ``n``, for about 2
    more kernels a trip.
    """
    n, parts, carry = int(n), int(parts), int(carry)
    others = [i for i in range(parts) if i != carry]

    def chain(k, m):
        outs = [[] for _ in others]
        for _ in range(m):
            ks = jax.random.split(k, parts)
            k = ks[carry]
            for o, i in zip(outs, others):
                o.append(ks[i])
        return k, outs

    if n <= block:
        return [jnp.stack(o) for o in chain(key, n)[1]]
    trips = -(-n // block)
    _, starts = jax.lax.scan(lambda k, _: (chain(k, block)[0], k), key, None, length=trips)
    subs = jax.vmap(lambda k: [jnp.stack(o) for o in chain(k, block)[1]])(starts)
    return [s.reshape((trips * block,) + s.shape[2:])[:n] for s in subs]


#: ``capacity`` of :func:`solve_where` that asks, whatever the policy, for every flagged lane in
#: one pass on the smallest buffer holding them (with ``batched_solve=True``)
ALL_LANES = 2**31 - 1

#: lanes a program of an elementwise fused kernel runs (one a thread: 4 warps;
#: :func:`fused_elementwise`)
LANE_BLOCK = 128


def fused_elementwise(fn: Callable, args: tuple, kernels: str, name: str = "fused_elementwise") -> tuple:
    """``fn(*args)`` for scalar ``args`` (0-d arrays, no booleans) and a ``fn`` that is elementwise
    in them (its operations act entry by entry, and a reduction over its arguments' entries may
    only decide how long a loop runs: a ``while_loop`` over a block of lanes runs until its last
    lane is done, a lane that is done leaving its values unchanged), returning a tuple of scalars.

    ``kernels`` "xla": ``fn`` itself.  Otherwise one ``pallas_call`` (Triton, or ``"interpret"``):
    under ``vmap`` a custom batching rule gives each program ``LANE_BLOCK`` lanes, one a thread,
    and ``fn`` runs on the block's [LANE_BLOCK] arrays; unbatched, a block of one."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
    args = tuple(jnp.asarray(a) for a in args)
    for a in args:
        if a.shape != ():
            raise ValueError(f"{name}: an elementwise kernel takes scalars, got an array of shape {a.shape}")
        if a.dtype == jnp.bool_:
            raise TypeError(f"{name}: boolean arrays are not supported; pass integers")
    if kernels == "xla":
        return tuple(fn(*args))
    from jax.experimental import pallas as pl

    n_in = len(args)
    outs = jax.eval_shape(lambda *a: tuple(fn(*a)), *args)
    for o in outs:
        if o.shape != ():
            raise ValueError(f"{name}: an elementwise kernel returns scalars, got shape {o.shape}")
    n_out = len(outs)

    def kernel(*refs):
        res = fn(*[r[...] for r in refs[:n_in]])
        for ref, v in zip(refs[n_in:], res):
            ref[...] = v

    def run(ins, block):
        """The kernel over [L] arrays (L a multiple of ``block``)."""
        L = ins[0].shape[0]
        spec = pl.BlockSpec((block,), lambda i: (i,))
        kw = dict(out_shape=tuple(jax.ShapeDtypeStruct((L,), o.dtype) for o in outs), grid=(L // block,),
                  in_specs=[spec] * len(ins), out_specs=tuple(spec for _ in outs))
        if kernels == "interpret":
            return pl.pallas_call(kernel, interpret=True, **kw)(*ins)
        from jax.experimental.pallas import triton as plt

        return pl.pallas_call(kernel, compiler_params=plt.CompilerParams(num_warps=LANE_BLOCK // 32, num_stages=1),
                              **kw)(*ins)

    @custom_vmap
    def call(*a):
        return tuple(o.reshape(()) for o in run([x.reshape((1,)) for x in a], 1))

    @call.def_vmap
    def _batched(axis_size, in_batched, *a):
        L = int(axis_size)
        Lp = -(-L // LANE_BLOCK) * LANE_BLOCK
        full = [x if b else jnp.broadcast_to(x, (L,) + x.shape) for x, b in zip(a, in_batched)]
        padded = [jnp.concatenate([x, jnp.broadcast_to(x[:1], (Lp - L,))]) if Lp > L else x for x in full]
        out = run(padded, LANE_BLOCK)
        return tuple(o[:L] for o in out), (True,) * n_out

    return call(*args)


def _eval_on_lanes(jaxpr, consts, args, shape):
    """Evaluate a program traced on scalars with ``args`` that are scalars or arrays of ``shape``
    (a block of lanes): an operation with an operand of ``shape`` broadcasts its scalar operands
    to it.  For the elementwise programs of :func:`fused_entries`."""
    env = {}

    def read(v):
        return v.val if isinstance(v, jax.extend.core.Literal) else env[v]

    for v, a in zip(jaxpr.constvars, consts):
        env[v] = a
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    widen = lambda x: x if jnp.shape(x) == shape else jax.lax.broadcast_in_dim(jnp.asarray(x), shape, ())  # noqa: E731
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        sub = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
        if eqn.primitive.name == "scan":  # a fori_loop of known trips: a loop over the block's values
            p = eqn.params
            nc, nk = p["num_consts"], p["num_carry"]
            if p["reverse"] or len(ins) != nc + nk or len(eqn.outvars) != nk:
                raise NotImplementedError("fused_entries: a scan over arrays (only fori_loop's form is supported)")
            body, consts_ = p["jaxpr"], ins[:nc]
            step = lambda _, c, body=body, consts_=consts_: tuple(  # noqa: E731
                widen(o) for o in _eval_on_lanes(body.jaxpr, body.consts, list(consts_) + list(c), shape))
            outs = list(jax.lax.fori_loop(0, p["length"], step, tuple(widen(x) for x in ins[nc:])))
        elif sub is not None:  # a nested program (jit, custom_jvp): inlined
            inner = sub.jaxpr if hasattr(sub, "jaxpr") else sub
            outs = _eval_on_lanes(inner, getattr(sub, "consts", ()), ins, shape)
        elif eqn.primitive is jax.lax.broadcast_in_dim_p and eqn.params["shape"] == ():
            outs = [ins[0]]
        else:
            if any(jnp.shape(x) == shape for x in ins):
                ins = [x if jnp.shape(x) == shape else jax.lax.broadcast_in_dim(jnp.asarray(x), shape, ()) for x in ins]
            out = eqn.primitive.bind(*ins, **eqn.params)
            outs = out if eqn.primitive.multiple_results else [out]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


#: programs of :func:`fused_entries` traced under a caller's key
_ENTRIES_PROGRAMS: dict = {}


def entries_int32(v):
    """``v`` as an int32 argument of :func:`fused_entries`: a host value (a NumPy array or a Python
    int, such as an all-active mask or a static count) stays a NumPy constant, which the kernel
    gets as literals; a traced one is converted."""
    if isinstance(v, (np.ndarray, int, np.integer)):
        return np.asarray(v, np.int32)
    return jnp.asarray(v).astype(jnp.int32)


def _with_host_constants(fn: Callable, args: tuple, host: dict, alias: dict, key, name: str):
    """(fn, args, alias, key) of :func:`fused_entries` with the NumPy arrays ``host`` ({argument
    index: array}) taken out of the arguments and given to ``fn`` as literals."""
    if any(i in host for i in alias):
        raise ValueError(f"{name}: a host constant (a NumPy array) cannot be aliased to an output")
    consts = {i: [np.asarray(v) for v in np.asarray(a).reshape(-1)] for i, a in host.items()}
    kept = [i for i in range(len(args)) if i not in host]

    def with_consts(*entries):
        given = dict(zip(kept, entries))
        return fn(*[[jnp.asarray(v) for v in consts[i]] if i in consts else given[i] for i in range(len(args))])

    if key is not None:
        key = (key, tuple((i, a.dtype.str, a.shape, a.tobytes()) for i, a in sorted(host.items())))
    return (with_consts, tuple(args[i] for i in kept), {kept.index(a): o for a, o in alias.items()},
            key)


def fused_entries(fn: Callable, args: tuple, out_shapes: tuple, kernels: str, name: str = "fused_entries",
                  key=None, alias: dict | None = None) -> tuple:
    """``fn`` on the entries of small arrays: ``args`` are arrays of any small shapes (no booleans),
    ``fn(*entries)`` receives each as the flat list of its entries (scalars, in row-major order)
    and returns a tuple of flat lists of scalars, the i-th the entries of an array of shape
    ``out_shapes[i]``; the result is those arrays.  ``fn`` must be elementwise in the entries, as in
    :func:`fused_elementwise`.

    ``kernels`` "xla": ``fn`` on the arrays' entries.  Otherwise one ``pallas_call`` (Triton, or
    ``"interpret"``): under ``vmap`` a program runs ``LANE_BLOCK`` lanes, one a thread, and loads
    each entry of a batched array as a [LANE_BLOCK] column of its [lanes, entries] block (an
    unbatched array's entries as scalars, shared by the lanes).  Where :func:`fused_elementwise`
    takes one scalar a lane per argument, whose slicing out of the lanes' arrays is a kernel of its
    own on a GPU, the arrays here go into the kernel as they are.  ``fn`` is traced once, on
    scalars, and reads no traced value but its arguments (whatever else it closes over is static);
    ``key`` (hashable, optional) says what else than its arguments it depends on, and a
    later call with the same ``key``, ``name`` and argument shapes reuses that trace (a program that
    calls the same kernel in several places is traced faster).

    ``alias`` ({argument index: output index}, optional): in the kernel, those outputs are written
    into their arguments' buffers (``input_output_aliases``; same shape and dtype, batched).  For a
    state that the kernel returns updated, inside a loop that carries it: XLA then keeps the
    loop's buffer, where a new output would be copied into it every trip.

    An argument that is a NumPy array (a host constant, such as an all-active mask) enters ``fn``
    as literals: the kernel has no operand for it, which XLA would otherwise materialise every
    trip of a loop, as a kernel of its own."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
    for a in args:
        if jnp.asarray(a).dtype == jnp.bool_:
            raise TypeError(f"{name}: boolean arrays are not supported; pass integers")
    alias = dict(alias or {})
    host = {i: a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    if host:  # host constants: literals of the kernel's program, not operands
        fn, args, alias, key = _with_host_constants(fn, args, host, alias, key, name)
    args = tuple(jnp.asarray(a) for a in args)
    out_shapes = tuple(tuple(int(n) for n in s) for s in out_shapes)
    sizes = [math.prod(a.shape) for a in args]

    def result(outs):
        if len(outs) != len(out_shapes):
            raise ValueError(f"{name}: fn returned {len(outs)} outputs, out_shapes has {len(out_shapes)}")
        res = []
        for o, s in zip(outs, out_shapes):
            if len(o) != math.prod(s):
                raise ValueError(f"{name}: an output of shape {s} needs {math.prod(s)} entries, fn gave {len(o)}")
            res.append(jnp.stack([jnp.asarray(v) for v in o]).reshape(s))
        return tuple(res)

    if kernels == "xla":
        flats = [a.reshape(-1) for a in args]
        return result(fn(*[[f[e] for e in range(n)] for f, n in zip(flats, sizes)]))
    from jax.experimental import pallas as pl

    # fn traced once, on scalars; the kernel and the unbatched form evaluate its program
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)

    def flat_fn(*scalars):
        outs = fn(*[list(scalars[offsets[i]:offsets[i + 1]]) for i in range(len(sizes))])
        return [jnp.asarray(v) for o in outs for v in o]

    cache = None if key is None else (key, name, tuple((a.shape, str(a.dtype)) for a in args), out_shapes)
    closed = _ENTRIES_PROGRAMS.get(cache) if cache is not None else None
    if closed is None:
        closed = jax.make_jaxpr(flat_fn)(*[jax.ShapeDtypeStruct((), a.dtype) for a, n in zip(args, sizes)
                                           for _ in range(n)])
        if cache is not None:
            if len(_ENTRIES_PROGRAMS) > 256:
                _ENTRIES_PROGRAMS.clear()
            _ENTRIES_PROGRAMS[cache] = closed
    out_dt = [v.aval.dtype for v in closed.jaxpr.outvars]
    out_off = [0]
    for sh in out_shapes:
        out_off.append(out_off[-1] + math.prod(sh))
    if out_off[-1] != len(out_dt):
        raise ValueError(f"{name}: fn gave {len(out_dt)} output entries, out_shapes need {out_off[-1]}")
    for a_i, o_i in alias.items():
        if not (0 <= a_i < len(args) and 0 <= o_i < len(out_shapes)) or args[a_i].shape != out_shapes[o_i] \
                or args[a_i].dtype != out_dt[out_off[o_i]]:
            raise ValueError(f"{name}: alias {a_i} -> {o_i} needs an argument and an output of one shape and dtype")

    def run(ins, batched, L, block):
        """The kernel over [L, n] batched arrays (L a multiple of ``block``) and [n] shared ones."""

        def kernel(*refs):
            ins_r, outs_r = refs[:len(ins)], refs[len(ins):]
            vals = [v for r, a, b in zip(ins_r, ins, batched)
                    for v in ([r[:, e] for e in range(a.shape[-1])] if b else [r[e] for e in range(a.shape[-1])])]
            res = _eval_on_lanes(closed.jaxpr, closed.consts, vals, (block,))
            for i, ref in enumerate(outs_r):
                for e in range(out_off[i + 1] - out_off[i]):
                    ref[:, e] = jnp.broadcast_to(res[out_off[i] + e], (block,)).astype(ref.dtype)

        in_specs = [pl.BlockSpec((block, a.shape[-1]), lambda i: (i, 0)) if b
                    else pl.BlockSpec((a.shape[-1],), lambda i: (0,)) for a, b in zip(ins, batched)]
        out_specs = tuple(pl.BlockSpec((block, math.prod(s)), lambda i: (i, 0)) for s in out_shapes)
        kw = dict(out_shape=tuple(jax.ShapeDtypeStruct((L, math.prod(s)), out_dt[out_off[i]])
                                  for i, s in enumerate(out_shapes)),
                  grid=(L // block,), in_specs=in_specs, out_specs=out_specs,
                  input_output_aliases={a_i: o_i for a_i, o_i in alias.items() if batched[a_i]})
        if kernels == "interpret":
            return pl.pallas_call(kernel, interpret=True, **kw)(*ins)
        from jax.experimental.pallas import triton as plt

        return pl.pallas_call(kernel, compiler_params=plt.CompilerParams(num_warps=LANE_BLOCK // 32, num_stages=1),
                              **kw)(*ins)

    @custom_vmap
    def call(*a):  # unbatched: the program as XLA operations
        res = jax.extend.core.jaxpr_as_fun(closed)(*[x.reshape(-1)[e] for x in a for e in range(x.size)])
        return tuple(jnp.stack(res[out_off[i]:out_off[i + 1]]).reshape(s) for i, s in enumerate(out_shapes))

    @call.def_vmap
    def _batched(axis_size, in_batched, *a):
        L = int(axis_size)
        Lp = -(-L // LANE_BLOCK) * LANE_BLOCK
        ins = []
        for x, b in zip(a, in_batched):
            if b:
                x = x.reshape((L, -1))
                if Lp > L:
                    x = jnp.concatenate([x, jnp.broadcast_to(x[:1], (Lp - L, x.shape[1]))])
            else:
                x = x.reshape((-1,))
            ins.append(x)
        out = run(ins, list(in_batched), Lp, LANE_BLOCK)
        return tuple(o[:L].reshape((L,) + s) for o, s in zip(out, out_shapes)), (True,) * len(out_shapes)

    return call(*args)


#: buffer sizes of a batched one-pass solve grow by this factor (the buffer is at most this many
#: times the lanes that need a solve)
SOLVE_BUCKET_FACTOR = 8


def _one_pass(p, ins, ins_b, outs, solver, axis_size, bucket_factor: int | None = None):
    """Every flagged lane served in one pass, on the smallest buffer of a few sizes (0, 1, 8, 64,
    ..., every lane; powers of ``bucket_factor``, default ``SOLVE_BUCKET_FACTOR``) that holds
    them: a ``switch``, no loop.  Buffer slots past the flagged lanes repeat the first flagged
    lane's problem, so they never run longer than a real solve."""
    factor = max(2, int(bucket_factor or SOLVE_BUCKET_FACTOR))
    sizes = [0]
    while sizes[-1] < axis_size:
        sizes.append(min(axis_size, max(1, sizes[-1] * factor)))

    def make(B):
        def serve(outs):
            if B == 0:
                return list(outs)
            idx = jnp.nonzero(p, size=B, fill_value=axis_size)[0]
            valid = idx < axis_size
            safe = jnp.where(valid, idx, idx[0])
            got = solver(*[a[safe] if b else a for a, b in zip(ins, ins_b)])
            tgt = jnp.where(valid, idx, axis_size)  # out of bounds: dropped
            return [r.at[tgt].set(g.astype(r.dtype), mode="drop") for r, g in zip(outs, got)]
        return serve

    count = jnp.sum(p)
    index = jnp.sum(count > jnp.asarray(sizes[:-1]))
    return jax.lax.switch(index, [make(B) for B in sizes], list(outs))


def in_smallest_bucket(count: jax.Array, buckets: tuple[int, ...], make: Callable, *args):
    """``make(B)(*args)`` for the smallest buffer size B of ``buckets`` (increasing, the last one
    holding every possible ``count``) with ``count <= B``.

    Under ``vmap`` (a ``custom_vmap`` rule) the buffer is the one holding every lane's count, so
    the branch taken is a real one, not a select over every bucket.  ``make(B)`` must give the
    same result for every B >= count (it is a buffer size, never a parameter of the result).
    """
    def index(c):
        return jnp.sum(c > jnp.asarray(buckets[:-1]))

    @custom_vmap
    def run(count, *args):
        return jax.lax.switch(index(count), [make(B) for B in buckets], *args)

    @run.def_vmap
    def _rule(axis_size, in_batched, count, *args):
        args = [a if b else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a))
                for a, b in zip(args, in_batched[1:])]
        out = jax.lax.switch(index(jnp.max(count)), [jax.vmap(make(B)) for B in buckets], *args)
        return out, jax.tree.map(lambda _: True, out)

    return run(count, *args)


def item_buckets(M: int, smallest: int = 16, factor: int = 4) -> tuple[int, ...]:
    """Sizes of the compacted item buffers: smallest, smallest*factor, ..., M."""
    out, b = [], smallest
    while b < M:
        out.append(b)
        b *= factor
    return tuple(out) + (M,)


# -- reductions whose code depends on the policy ------------------------------------------------
def argmax_fast(v: jax.Array) -> jax.Array:
    """First index of the maximum of a vector; ``max`` + ``where`` is 2-6x faster than ``argmax``
    under vmap for K >= 100 on CPU (measured).  Under the CPU policy
    (:func:`current_policy`) both reductions go through :func:`_fold`: the same
    index, about 2x faster again at K = 1000 (docs/measurements/2026-11-26-cpu-lts-many-arms.md)."""
    return max_argmax(v)[1]


def max_argmax(v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(max, first index reaching it) of a vector, as :func:`argmax_fast`."""
    n = v.shape[-1]
    folds = v.ndim == 1 and n > _FOLD_TO and not current_policy().batched
    fold = _fold if folds else (lambda x, op: x)
    m = jnp.max(fold(v, jnp.maximum))
    return m, jnp.min(fold(jnp.where(v == m, jnp.arange(n), n), jnp.minimum))


_FOLD_TO = 32  # XLA:CPU reduces a vector longer than this in two kernels (a reduce-window first)


def _fold(v: jax.Array, op) -> jax.Array:
    """A vector of at most ``_FOLD_TO`` entries whose max (``op`` = ``jnp.maximum``) or min
    (``jnp.minimum``) is that of ``v`` [n], by elementwise ``op`` over its slices: halves (until
    at most ``_FOLD_TO``^2 entries are left), then rows of at most ``_FOLD_TO`` entries (padded
    with ``op``'s identity).  max and min are exact in any order, so the reduction of the result
    is bit for bit that of ``v``.  On XLA:CPU the elementwise steps vectorise and fuse into the
    final reduction's input, where a long ``max`` becomes a reduce-window of scalar code plus a
    second reduction (measured at K = 1000: 1.7 -> 0.85 us for a max and its first index; 24 ->
    11 us for 16 lanes under ``vmap``)."""
    if jnp.issubdtype(v.dtype, jnp.floating):
        fill = -jnp.inf if op is jnp.maximum else jnp.inf
    elif v.dtype == jnp.bool_:
        fill = op is jnp.minimum
    else:
        info = jnp.iinfo(v.dtype)
        fill = info.min if op is jnp.maximum else info.max
    y = v
    while True:  # halves until rows of _FOLD_TO entries are at most _FOLD_TO of them
        h = y.shape[0] // 2
        y = op(y[:h], y[h:2 * h]) if y.shape[0] % 2 == 0 else \
            op(y[:h], y[h:2 * h]).at[0].set(op(op(y[0], y[h]), y[-1]))
        if h <= _FOLD_TO * _FOLD_TO:
            break
    rows = -(-h // _FOLD_TO)
    cols = -(-h // rows)
    if rows * cols != h:
        y = jnp.concatenate([y, jnp.full((rows * cols - h,), fill, y.dtype)])
    out = y[:cols]
    for i in range(1, rows):
        out = op(out, y[i * cols:(i + 1) * cols])
    return out


def columns_dot(M: jax.Array, u: jax.Array) -> jax.Array:
    """M @ u for a matrix with a static, small number of columns, as the sum of its columns scaled
    by u (in column order): elementwise, so it fuses with what reads it (an argmax, a max) into one
    pass, where a matrix-vector product is a kernel of its own."""
    out = M[:, 0] * u[0]
    for i in range(1, M.shape[1]):
        out = out + M[:, i] * u[i]
    return out
