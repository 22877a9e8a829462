"""The lane loop: one device's replications stepped together, finished lanes refilled in place."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxbandits.algorithms.base import Algorithm, is_correct
from jaxbandits.batching import solve_where
from jaxbandits.instances.base import Instance


class Lane(NamedTuple):
    slot: jax.Array      # index in the chunk's task list (>= C: no task)
    active: jax.Array    # running a replication
    finished: jax.Array  # replication over, outcome not yet written to the output buffer
    steps: jax.Array     # steps taken by this replication
    key: jax.Array       # the replication's run key
    state: Any           # the algorithm state
    inst: jax.Array      # index of the replication's instance in the shared batch


class Out(NamedTuple):
    answer: jax.Array    # [C, M] bool
    samples: jax.Array   # [C]
    steps: jax.Array     # [C]
    stopped: jax.Array   # [C] bool
    correct: jax.Array   # [C] bool
    pulls: jax.Array     # [C, K] (or [C, 0] when not recorded)
    converged: jax.Array  # [C] bool (Outcome.converged; True for algorithms without it)


def replication_key(key: jax.Array, instance_index, rep_index) -> jax.Array:
    """Key of replication ``rep_index`` on instance ``instance_index``: depends on nothing else."""
    return jax.random.fold_in(jax.random.fold_in(key, instance_index), rep_index)


def final_states(algorithm: Algorithm, instance: Instance, key: jax.Array, n: int, max_steps: int):
    """The algorithm states at the end of ``n`` replications on one instance, batched on the
    leading axis: what a run did beyond its :class:`Results` row (active sets, eliminated arms,
    a solver's certificate).  Replication i uses ``fold_in(key, i)`` split into its init and run
    keys, and the step after t rounds ``fold_in(run_key, t)`` (``algorithm.rounds``: t is the step
    count unless the algorithm says otherwise), as :func:`simulate` does: with
    ``key = fold_in(k, 0)`` these are the replications of ``simulate(algorithm, instance, k, ...)``.
    ``prepare`` runs first, as in the engine.  One vmapped ``while_loop``: every replication runs
    until the slowest stops (or ``max_steps``), so this is for inspection, not for throughput.
    As in the engine, the dynamic fields, the instance, the key and ``max_steps`` are traced
    arguments: one program serves every value of them (per static configuration, ``n`` and
    shapes)."""
    static, dynamic = algorithm.split_dynamic()
    return _final_states(static, int(n), dynamic, instance, key,
                         jnp.asarray(min(int(max_steps), 2**31 - 1), jnp.int32))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _final_states(static: Algorithm, n: int, dynamic: dict, instance: Instance, key: jax.Array,
                  max_steps: jax.Array):
    algorithm = static.with_dynamic(dynamic)
    inst = jax.tree.map(lambda a: a[0], algorithm.prepare(jax.tree.map(lambda a: a[None], instance)))

    def one(i):
        k_init, k_run = jax.random.split(jax.random.fold_in(key, i))

        def body(c):
            s, t = c
            return algorithm.step(jax.random.fold_in(k_run, algorithm.rounds(s, t)), s, inst), t + 1

        s, _ = jax.lax.while_loop(lambda c: ~algorithm.done(c[0]) & (algorithm.rounds(*c) < max_steps), body,
                                  (algorithm.init(k_init, inst), jnp.int32(0)))
        return s

    return jax.vmap(one)(jnp.arange(n))


def _select(mask, new, old):
    """Per-lane select over a pytree of [L, ...] leaves."""
    def sel(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)
    return jax.tree.map(sel, new, old)


def instance_at(instances: Instance, j: jax.Array) -> Instance:
    """Instance ``j`` of the shared batch, as the kernels see it.

    Lanes hold an instance *index*, never a copy of the instance.  With a single instance (the
    common Monte Carlo study) the index is ignored and the kernels get the one instance
    unbatched: under ``vmap`` its arms, items and caches stay one shared array, and products such
    as ``X @ v`` over the lanes become one matrix product instead of per-lane copies.  With a batch,
    each lane gathers its instance's leaves where it reads them.
    """
    if instances.batch_shape[0] == 1:
        return jax.tree.map(lambda a: a[0], instances)
    return jax.tree.map(lambda a: a[j], instances)


def make_chunk_runner(static_algorithm: Algorithm, lanes: int, chunk: int, record_pulls: bool,
                      refill_min: int, block_steps: int = 1):
    """Per-device loop over one chunk of ``chunk`` task ids with ``lanes`` refilled lanes.

    Lanes advance in blocks of ``block_steps`` steps, a loop whose trip count is known when the
    program is compiled (on an accelerator it runs without asking the host anything); a lane that
    finishes inside a block is masked until the block ends.  Once per block, the loop tests whether
    any lane is still running and whether to refill: finished lanes wait (idle) until
    ``refill_min`` lanes are free, then all are written out and refilled (under the accelerator
    policy in one batched ``init`` over every lane, so algorithms whose ``init`` is expensive, a
    design solve, do not pay a full-width ``init`` every block; under the CPU policy one ``init``
    per lane that gets a replication, :func:`jaxbandits.batching.solve_where`).  A replication's
    steps and keys do not depend on the block it ran in, so results are the same for every
    ``block_steps``.  The returned ``run`` takes the algorithm's dynamic field values,
    ``max_steps`` and ``n_reps`` as traced arguments, and returns the chunk's outcomes and the
    lane-steps executed per lane.
    """
    L, C, S = lanes, chunk, int(block_steps)
    if S < 1:
        raise ValueError(f"block_steps must be >= 1, got {block_steps}")

    def task_at(slot, task_ids):
        """(whether ``slot`` holds a task, its task id, 0 where none)."""
        tid = task_ids[jnp.minimum(slot, C - 1)]
        return (slot < C) & (tid >= 0), jnp.maximum(tid, 0)

    def lane_for(algorithm, n_reps, slot, task_ids, instances, key):
        valid, tid = task_at(slot, task_ids)
        j, i = tid // n_reps, tid % n_reps
        k_init, k_run = jax.random.split(replication_key(key, j, i))
        state = algorithm.init(k_init, instance_at(instances, j))
        return Lane(slot, valid, jnp.zeros((), bool), jnp.zeros((), jnp.int32), k_run, state, j.astype(jnp.int32))

    def run(task_ids, instances, key, dynamic, max_steps, n_reps):
        algorithm = static_algorithm.with_dynamic(dynamic)
        lane_init = jax.vmap(functools.partial(lane_for, algorithm, n_reps), in_axes=(0, None, None, None))
        lanes0 = lane_init(jnp.arange(L), task_ids, instances, key)
        M = instances.items.shape[-2]
        K = instances.arms.shape[-2]
        outcome = jax.vmap(lambda st, j: algorithm.outcome(st, instance_at(instances, j)))
        proto = jax.eval_shape(lambda l: outcome(l.state, l.inst), lanes0)
        out0 = Out(
            answer=jnp.zeros((C, M), bool),
            samples=jnp.zeros((C,), proto.samples.dtype),
            steps=jnp.zeros((C,), jnp.int32),
            stopped=jnp.zeros((C,), bool),
            correct=jnp.zeros((C,), bool),
            pulls=jnp.zeros((C, K if record_pulls else 0), proto.pulls.dtype),
            converged=jnp.ones((C,), bool),
        )
        m, eps = algorithm.top_m, algorithm.slack

        in_place = algorithm.holds_in_place(instances)

        def step_lane(lane: Lane):
            """The lane's step; where the algorithm keeps a held lane's state itself (its arrays in
            place), the held lanes' state as it was (``step_where``), else the step for every lane."""
            k = jax.random.fold_in(lane.key, algorithm.rounds(lane.state, lane.steps))
            if in_place:
                return algorithm.step_where(k, lane.state, instance_at(instances, lane.inst), lane.active)
            return algorithm.step(k, lane.state, instance_at(instances, lane.inst))

        def cond(carry):
            lanes_, _, _, _ = carry
            return jnp.any(lanes_.active | lanes_.finished)

        def refill(args):
            lanes_, nxt, out = args
            fin = lanes_.finished
            oc = outcome(lanes_.state, lanes_.inst)
            corr = jax.vmap(lambda a, j: is_correct(a, instance_at(instances, j), m, eps))(oc.answer, lanes_.inst)
            idx = jnp.where(fin, lanes_.slot, C)  # C is out of bounds: dropped
            upd = lambda buf, val: buf.at[idx].set(val, mode="drop")
            out = Out(
                answer=upd(out.answer, oc.answer),
                samples=upd(out.samples, oc.samples),
                steps=upd(out.steps, lanes_.steps),
                stopped=upd(out.stopped, jax.vmap(algorithm.done)(lanes_.state)),
                correct=upd(out.correct, corr),
                pulls=upd(out.pulls, oc.pulls) if record_pulls else out.pulls,
                converged=out.converged if oc.converged is None else upd(out.converged, oc.converged),
            )
            free = ~lanes_.active
            new_slots = jnp.where(free, nxt + jnp.cumsum(free, dtype=nxt.dtype) - 1, C)
            lanes_ = fill(lanes_, free, new_slots)
            return lanes_, jnp.minimum(nxt + jnp.sum(free, dtype=nxt.dtype), C), out

        def fill(lanes_, free, slots):
            """The free lanes start the replications of their new slots.  A lane left without a
            task keeps its last, finished state: its steps are discarded, and a finished state is
            the one the algorithm has least left to do in (a fresh state would, for example, run
            XY-adaptive's first-phase pulls over every pair each step)."""
            if static_algorithm.policy.batched:
                fresh = lane_init(slots, task_ids, instances, key)
                fresh = fresh._replace(state=_select(fresh.active, fresh.state, lanes_.state))
                return _select(free, fresh, lanes_)
            # on a CPU only the lanes that get a replication run ``init`` (one after the other,
            # solve_where), not every lane: lanes finish at different steps, so a refill usually
            # serves one lane, and a full-width ``init`` cost LT&S at K = 1000 0.74 ms a refill
            # against 0.28 ms for one lane.  The same lanes as the full-width refill; a free lane
            # without a task is written out (no longer ``finished``) and stays idle as it is.
            gets = free & task_at(slots, task_ids)[0]

            def start(slot, task_ids, instances, key, dynamic, n_reps, old):  # no closed-over tracers
                new = lane_for(static_algorithm.with_dynamic(dynamic), n_reps, slot, task_ids, instances, key)
                return jax.tree.map(lambda a, b: a.astype(b.dtype), new, old)

            lanes_ = jax.vmap(lambda g, slot, old: solve_where(
                g, start, (slot, task_ids, instances, key, dynamic, n_reps, old), old))(gets, slots, lanes_)
            return lanes_._replace(finished=lanes_.finished & ~free)

        def advance(lanes_: Lane) -> Lane:
            """One step of every active lane; lanes that stop or complete max_steps rounds finish."""
            state = jax.vmap(step_lane)(lanes_)
            if not in_place:
                state = _select(lanes_.active, state, lanes_.state)
            steps = lanes_.steps + lanes_.active.astype(jnp.int32)
            stop = jax.vmap(algorithm.done)(state)
            fin = lanes_.active & (stop | (jax.vmap(algorithm.rounds)(state, steps) >= max_steps))
            return lanes_._replace(state=state, steps=steps, active=lanes_.active & ~fin,
                                   finished=lanes_.finished | fin)

        def body(carry):
            lanes_, nxt, out, iters = carry
            if S == 1:
                lanes_ = advance(lanes_)
            else:  # a static trip count: no host round trip per step on an accelerator
                lanes_ = jax.lax.fori_loop(0, S, lambda _, l: advance(l), lanes_)
            n_free = jnp.sum(~lanes_.active)
            trigger = jnp.any(lanes_.finished) & (
                ((n_free >= refill_min) & (nxt < C)) | ~jnp.any(lanes_.active))
            lanes_, nxt, out = jax.lax.cond(trigger, refill, lambda a: a, (lanes_, nxt, out))
            return lanes_, nxt, out, iters + S

        carry = (lanes0, jnp.asarray(L, jnp.int32), out0, jnp.zeros((), jnp.result_type(int)))
        _, _, out, iters = jax.lax.while_loop(cond, body, carry)
        return out, iters[None]

    return run
