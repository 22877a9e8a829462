"""Hyperparameters as traced arguments: a sweep over delta, epsilon, sigma or a tolerance reuses
one compiled program per algorithm configuration and instance shape, and a traced field gives
exactly the results of the same value baked into the program.  (A change of n_reps, a resumed task
list and more chunks reuse one program too: tests/test_engine.py, with the layouts.)"""
import dataclasses

import jax
import numpy as np
import pytest

import jaxbandits  # noqa: F401
from jaxbandits import engine
from jaxbandits.algorithms import LinUCB, SphereBAI, UniformGLR, XYStatic
from jaxbandits.algorithms.fixed_budget.budget_capped import BudgetCapped, lingape_budgeted
from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
from jaxbandits.algorithms.top_m.gifa import MLinGapE
from jaxbandits.instances import seeds


def static_twin(alg):
    """The same configuration with every field baked into the compiled program (no dynamic
    fields, also in a wrapped algorithm): the reference a traced field must reproduce bit for bit."""
    cls = type(alg)
    twin = dataclasses.dataclass(frozen=True)(type("Static" + cls.__name__, (cls,), {"dynamic_fields": ()}))
    kw = {f.name: getattr(alg, f.name) for f in dataclasses.fields(alg)}
    kw = {k: static_twin(v) if isinstance(v, engine.Algorithm) else v for k, v in kw.items()}
    return twin(**kw)


def _soare():
    return seeds.soare_benchmark(2, omega=0.3)


def _sphere():
    return sphere_instance(jax.random.key(2), jax.numpy.array([1.0, 0.5, 0.2]), num_items=40)


def test_split_dynamic_keeps_none_static_and_nests_wrapped_algorithms():
    static, values = LinUCB(budget=60, delta=0.1).split_dynamic()
    assert static.alpha is None and "alpha" not in values  # None: the OFUL radius, a structural choice
    alg = UniformGLR(delta=0.1, sigma=None, u=1)
    static, values = alg.split_dynamic()
    assert set(values) == {"delta", "u", "sigma"} and static.sigma is None and static.delta is None
    assert np.isnan(values["sigma"])  # sigma=None is traced as NaN (Algorithm.none_traced) ...
    assert static.with_dynamic(values) == alg  # ... and comes back as None
    assert values["u"].dtype == np.float64  # u=1 and u=1.0 share a program
    s1, _ = UniformGLR(delta=0.1, sigma=0.5).split_dynamic()
    s2, _ = UniformGLR(delta=0.2, sigma=0.7).split_dynamic()
    assert s1 == s2 and hash(s1) == hash(s2)
    capped = lingape_budgeted(100, 0.1)
    static, values = capped.split_dynamic()
    assert static.inner.delta is None and float(values["inner"]["delta"]) == 0.1
    assert static.with_dynamic(values) == capped


def test_delta_epsilon_sigma_sweep_compiles_once():
    inst = _sphere()
    key = jax.random.key(0)
    n0 = engine.programs_compiled()
    stops = {}
    for delta, eps, sigma in [(0.1, 0.3, 0.8), (0.05, 0.35, 0.7), (0.2, 0.4, 0.6), (0.1, 0.3, 0.6)]:
        r = engine.simulate(SphereBAI(epsilon=eps, delta=delta, sigma=sigma), inst, key, 8, 3000)
        assert r.stopped.all()
        stops[delta, eps, sigma] = int(r.samples.max())
    assert engine.programs_compiled() - n0 <= 1  # 0 when an earlier test compiled this program
    assert len(set(stops.values())) == len(stops)  # every traced value reached the kernel
    n1 = engine.programs_compiled()
    engine.simulate(SphereBAI(epsilon=0.25, delta=0.2, sigma=0.9), inst, key, 8, 3000)
    assert engine.programs_compiled() == n1


def test_sigma_none_shares_the_program_and_reads_the_instance_noise():
    """sigma=None (the instance's noise scale) and an explicit sigma are one program, and None
    gives exactly the run of sigma = the instance's noise (a NaN left unresolved by
    common.noise_scale would never stop)."""
    inst = dataclasses.replace(_sphere(), noise=jax.numpy.asarray(0.7))
    key = jax.random.key(0)
    explicit = engine.simulate(SphereBAI(epsilon=0.3, delta=0.1, sigma=0.7), inst, key, 8, 3000)
    n1 = engine.programs_compiled()
    default = engine.simulate(SphereBAI(epsilon=0.3, delta=0.1), inst, key, 8, 3000)
    assert engine.programs_compiled() == n1
    assert explicit.stopped.all() and default.stopped.all()
    np.testing.assert_array_equal(np.asarray(default.samples), np.asarray(explicit.samples))
    np.testing.assert_array_equal(np.asarray(default.answer), np.asarray(explicit.answer))


# One configuration per kind of traced field: a plain kernel (UniformGLR), epsilon (SphereBAI), a
# design solved in prepare() through map_instances (jitted on the static part, XY-static), a
# fixed-budget kernel (LinUCB), and a wrapper with a traced budget around a top-m kernel whose own
# fields (delta, epsilon, sigma, a regulariser) are traced as nested values (m-LinGapE capped at a
# budget).
TRACED_CASES = [
    (UniformGLR(delta=0.1, u=0.5, sigma=0.8), _soare, 3000),
    (SphereBAI(epsilon=0.3, delta=0.1, sigma=0.8), _sphere, 3000),
    # a budget at which about half the replications stop on m-LinGapE's own rule (where delta and
    # epsilon decide) and the others reach the budget (checked below)
    (BudgetCapped(MLinGapE(2, delta=0.1, epsilon=0.02, sigma=0.8, reg=0.3), 450),
     lambda: seeds.topm_classic(omega=1.0), 450),
    (XYStatic(delta=0.1, sigma=0.8, gamma=1.2, design_tol=1e-3, design_method="paper"), _soare, 80),
    (LinUCB(budget=60, reg=2.0, delta=0.1, theta_norm=1.5), lambda: seeds.static_basis(0.5, d=6), 60),
]
TRACED_IDS = ["uniform", "sphere", "capped-m-lingape", "xy-static", "linucb"]
TRACED_REPS = 12


def with_delta(alg, delta):
    """``alg`` with another delta (in the wrapped algorithm for a wrapper without one)."""
    if "delta" in {f.name for f in dataclasses.fields(alg)}:
        return dataclasses.replace(alg, delta=delta)
    return dataclasses.replace(alg, inner=with_delta(alg.inner, delta))


def test_sweep_algorithms_deltas_K_compiles_once_per_algorithm_and_K():
    """The five traced configurations on their instances (four shapes), and the uniform GLR on a
    second shape, each at 4 deltas: at most one program per configuration and shape, and running
    the sweep again compiles none.  (It runs before the per-configuration test below, which then
    finds these programs compiled: a process deep into the suite drops its programs first, see
    below, and would otherwise compile them twice.)"""
    deltas = [0.2, 0.1, 0.05, 0.01]
    runs = [(alg, make(), max_steps) for alg, make, max_steps in TRACED_CASES]
    runs.append((TRACED_CASES[0][0], _sphere(), 3000))  # the same algorithm at another K and d

    def sweep():
        for alg, inst, max_steps in runs:
            for delta in deltas:
                engine.simulate(with_delta(alg, delta), inst, jax.random.key(0), TRACED_REPS, max_steps)

    from jaxbandits import programs

    # a process deep into the suite may be near the memory-mapping limit, where the engine drops
    # its programs before compiling (jaxbandits.programs): drop them first when the six programs
    # (~1,000 mappings each) could take the process there, and check no release happened in
    # between, so a recompilation here can only be a cache miss
    programs.release_if_high(0.3)
    releases = programs.releases()
    n0 = engine.programs_compiled()
    sweep()
    assert engine.programs_compiled() - n0 <= len(runs)
    n1 = engine.programs_compiled()
    sweep()
    assert programs.releases() == releases
    assert engine.programs_compiled() == n1


@pytest.mark.parametrize("alg, make, max_steps", TRACED_CASES, ids=TRACED_IDS)
def test_traced_fields_reproduce_baked_in_values(alg, make, max_steps):
    """Same key and configuration: the traced program returns bit for bit what a program with the
    values baked in returns (which is what the library computed before they were traced)."""
    inst = make()
    key = jax.random.key(7)
    traced = engine.simulate(alg, inst, key, TRACED_REPS, max_steps)
    baked = engine.simulate(static_twin(alg), inst, key, TRACED_REPS, max_steps)
    assert traced.stopped.any()
    if isinstance(alg, BudgetCapped):  # both ends of the capped run are compared
        assert (traced.samples < alg.budget).any() and (traced.samples >= alg.budget).any()
    for f in ("samples", "steps", "answer", "pulls", "correct", "stopped"):
        np.testing.assert_array_equal(getattr(traced, f), getattr(baked, f), err_msg=f)
