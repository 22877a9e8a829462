"""GPU-shaped steps: no loop whose trip count depends on data inside an algorithm's step.

On an accelerator a ``while`` whose trip count is not known when the program is compiled runs as
a host loop (its predicate is copied to the host and waited for, every iteration), and under
``vmap`` it runs until the slowest lane is done.  Every algorithm's step is traced here as the
engine traces it on an accelerator (vmapped over lanes, design solves batched); each remaining
data-dependent ``while`` must be on the allow-list below, which says why it is still there.
Fixed-trip loops (``fori_loop`` with static bounds, ``scan``) are not counted, nor loops inside a
fused kernel (``pallas_call``): there each program runs its own lane's trips, with no host in the
loop.
"""
import math
import os
import sysconfig

import jax
import jax.extend as jex
import jax.numpy as jnp
import pytest

from jaxbandits import algorithms as A
from jaxbandits import batching
from jaxbandits.algorithms.base import with_batching
from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
from jaxbandits.engine import instance_at
from jaxbandits.instances import garivier_kaufmann_2016, k_armed, seeds
from jaxbandits.instances.base import as_batch

#: where a data-dependent loop may stay ("file.py:function" of the code that starts it, matched as
#: a prefix) -> why it is still there; none is left under the GPU policy
ALLOWED: dict[str, str] = {}


def _cases():
    key = jax.random.key(0)
    soare = seeds.soare_benchmark(2, omega=0.3)
    many = seeds.many_arms_code(key, 12)
    topm = seeds.topm_classic()
    static = seeds.static_basis(0.3, d=4, noise=math.sqrt(10.0))
    sphere = seeds.sphere_calibrated(key, 6, 3)
    logistic = seeds.logistic_gse(key, 6, 3)
    basis = sphere_instance(key, jnp.array([0.6, 0.3, 0.1]), num_items=8, random_basis=True)
    bernoulli = garivier_kaufmann_2016(1)
    return [
        ("LT&S", A.LazyTrackAndStop(averaging=False), many), ("RAGE", A.RAGE(), soare),
        ("XY-static", A.XYStatic(), soare), ("XY-oracle", A.XYOracle(), soare),
        ("XY-adaptive", A.XYAdaptive(), soare), ("ALBA", A.ALBA(), soare), ("Oracle", A.Oracle(), soare),
        ("uniform", A.UniformGLR(), sphere), ("eliminate", A.Eliminate(A.UniformGLR()), sphere),
        ("FWS", A.FWS(), soare), ("FWS exact game", A.FWS(game="exact"), soare), ("TopTwo", A.TopTwo(), soare), ("LinGame", A.LinGame(), soare),
        ("SphereBAI", A.SphereBAI(epsilon=0.3, delta=0.3), basis), ("LinGapE", A.LinGapE(), many),
        ("m-LinGapE", A.MLinGapE(2), topm), ("m-LinGapE optimized", A.MLinGapE(2, selection="optimized"), topm),
        ("LinGIFA", A.LinGIFA(2), topm), ("LUCB", A.LUCB(2), topm),
        ("UGapE", A.UGapE(2), topm), ("GSE", A.GSE(budget=40), static), ("OD-LinBAI", A.ODLinBAI(budget=40), static),
        ("BayesGap", A.BayesGap(budget=40), static), ("Peace", A.Peace(budget=40), static), ("HalvingPeace", A.HalvingPeace(budget=40), static),
        ("FC-Peace", A.FixedConfidencePeace(), soare),
        ("LinUCB", A.LinUCB(budget=40), static), ("UCB-GLM", A.UCBGLM(budget=40), logistic),
        ("capped LinGapE", A.BudgetCapped(A.LinGapE(), 40), static),
        # K-armed, Bernoulli arms: a phase's or a round's sums by the fixed-trip binomial
        ("Successive Rejects", A.SuccessiveRejects(budget=300), bernoulli),
        ("Sequential Halving", A.SequentialHalving(budget=300), bernoulli),
        ("Successive Elimination", A.SuccessiveElimination(), bernoulli),
        ("EB-TC Bernoulli", A.KArmedTopTwo(), bernoulli),
        ("Track-and-Stop Bernoulli", A.KArmedTrackAndStop(), bernoulli),
        ("EB-TCε", A.KArmedEBTCEpsilon(), k_armed((1.0, 0.95, 0.5, 0.4), "gaussian")),
        ("EB-TCε fixed", A.KArmedEBTCEpsilon(selection="fixed", epsilon0=0.0), k_armed((1.0, 0.95, 0.5, 0.4), "gaussian")),
    ]


_SKIP = (os.path.dirname(jax.__file__), sysconfig.get_paths()["stdlib"])


def _where(frames) -> str | None:
    """``file.py:function`` of the innermost frame outside JAX and the standard library."""
    for f in frames:
        if not f.file_name.startswith(_SKIP):
            return f"{f.file_name.rsplit('/', 1)[-1]}:{f.function_name.replace('.<locals>', '')}"
    return None


def _inner(jaxpr, where, inner, out):
    for e in jaxpr.eqns:
        tb = e.source_info.traceback
        here = _where(tb.frames) if tb is not None else None
        w = here or where
        name = e.params.get("name") if e.primitive.name in ("pjit", "jit", "closed_call") else None
        if e.primitive.name == "while":
            out.append((w, inner))
        if e.primitive.name == "pallas_call":  # one kernel: a lane's loop runs in its own program
            continue
        for v in e.params.values():
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(x, jex.core.ClosedJaxpr):
                    _inner(x.jaxpr, w, name or inner, out)
                elif isinstance(x, jex.core.Jaxpr):
                    _inner(x, w, name or inner, out)


def data_dependent_loops(algorithm, instance, lanes: int = 4):
    """(where, inner JAX function) of every ``while`` in the vmapped step, traced under the
    accelerator policy."""
    # shapes only: nothing is compiled or run but the traced step
    one = jax.eval_shape(lambda b: instance_at(algorithm.prepare(b), jnp.zeros((), jnp.int32)), as_batch(instance))
    keys = jax.random.split(jax.random.key(0), lanes)
    # the accelerator policy as the engine passes it, the configuration's own (Algorithm.batching);
    # init too: a state may depend on the policy
    algorithm = with_batching(algorithm, batching.solve_for("gpu", lanes))
    state = jax.eval_shape(jax.vmap(algorithm.init, in_axes=(0, None)), keys, one)
    jaxpr = jax.make_jaxpr(jax.vmap(algorithm.step, in_axes=(0, 0, None)))(keys, state, one)
    out = []
    _inner(jaxpr.jaxpr, None, None, out)
    return out


def _allowed(where, inner) -> bool:
    return where is not None and any(where.startswith(k) for k in ALLOWED)


@pytest.mark.parametrize("name,algorithm,instance", _cases(), ids=[c[0] for c in _cases()])
def test_no_data_dependent_loop_in_a_step_outside_the_allow_list(name, algorithm, instance):
    loops = data_dependent_loops(algorithm, instance)
    bad = [lp for lp in loops if not _allowed(*lp)]
    assert not bad, f"{name}: data-dependent loops inside a step: {bad}"


def test_the_structural_check_sees_a_data_dependent_loop():
    """The check can fail: a step with a while_loop on data is caught and named."""
    class Looping(A.UniformGLR):
        def step(self, key, state, instance):
            n = jax.lax.while_loop(lambda c: c < state.t, lambda c: c + 1.0, 0.0)
            out = super().step(key, state, instance)
            return out._replace(stopped=out.stopped | (n < 0))

    loops = data_dependent_loops(Looping(), seeds.sphere_calibrated(jax.random.key(0), 6, 3))
    where = [w for w, _ in loops]
    assert any(w.endswith("Looping.step") for w in where) and not any(_allowed(w, None) for w in where)


def test_fixed_trip_while_gives_the_while_loop_result_without_a_data_dependent_loop():
    def cond(c):
        return (c[1] < 30) & (jnp.abs(c[0] - jnp.cos(c[0])) > 1e-12)

    def body(c):  # Newton on x = cos x: a data-dependent number of iterations per start
        x, it = c
        return x - (x - jnp.cos(x)) / (1.0 + jnp.sin(x)), it + 1

    starts = jnp.array([0.0, 0.7390851332, 3.0, -2.0, 10.0])
    ref = jax.vmap(lambda x: jax.lax.while_loop(cond, body, (x, 0)))(starts)
    f = jax.vmap(lambda x: batching.fixed_trip_while(cond, body, (x, 0), 30))
    got = jax.jit(f)(starts)
    assert jnp.array_equal(got[0], ref[0]) and jnp.array_equal(got[1], ref[1])
    assert len(set(ref[1].tolist())) > 1  # the lanes did need different iteration counts
    assert "while" not in str(jax.make_jaxpr(f)(starts))
