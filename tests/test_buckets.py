"""Shape buckets: padded arms are never pulled, padded items never returned, a padded instance
runs the same replications as the unpadded one (a representative set of kernels here, every
supported algorithm in ``benchmarks/shape_buckets.py --part padding``), and a sweep over K compiles
one program per bucket."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

import jaxbandits as jb
from jaxbandits import engine, programs
from jaxbandits.algorithms import (ALBA, LUCB, RAGE, FixedConfidencePeace, LazyTrackAndStop, LinGapE, MLinGapE, Oracle,
                                   UGapE, UniformGLR, XYAdaptive, is_correct)
from jaxbandits.design import characteristic_time
from jaxbandits.instances.base import Buckets, bucket_size, pad_to


def _instance(K: int, M: int | None, d: int = 3, hardness: float = 10.0, seed: int = 0):
    """Random arms on the sphere, items = arms (M None) or M random unit items, theta a random
    direction, the noise set so that sigma^2 T* = ``hardness`` (short runs)."""
    kx, kz, kt = jax.random.split(jax.random.key(seed), 3)
    unit = lambda k, n: (lambda v: v / jnp.linalg.norm(v, axis=-1, keepdims=True))(  # noqa: E731
        jax.random.normal(k, (n, d)))
    X = unit(kx, K)
    Z = None if M is None else unit(kz, M)
    theta = unit(kt, 1)[0]
    inst = jb.make_instance(X, theta, 1.0, items=Z)
    return inst.replace(noise=jnp.sqrt(hardness / characteristic_time(inst)))


SQUARE = _instance(6, None)          # K = M = 6 -> bucket (8, 8)
TRANSDUCTIVE = _instance(5, 11)      # K = 5, M = 11 -> bucket (8, 16)

# (name, algorithm, instance, exactly equal padded vs unpadded with the same keys): one case per
# kernel that reads the masks (XY-static shares the phased XY kernel and ``prepared_design`` with
# the Oracle's case, which also pads items; m-LinGapE's greedy selection is LinGapE's)
ALL_CASES = [
    ("uniform", UniformGLR(delta=0.1), TRANSDUCTIVE, True),
    ("lts", LazyTrackAndStop(delta=0.1), TRANSDUCTIVE, True),
    ("rage", RAGE(delta=0.1), TRANSDUCTIVE, True),
    ("fc-peace", FixedConfidencePeace(delta=0.1), TRANSDUCTIVE, True),
    ("oracle-code", Oracle.released_code(delta=0.1), TRANSDUCTIVE, True),
    ("xy-adaptive", XYAdaptive(delta=0.1), TRANSDUCTIVE, True),
    ("alba", ALBA(delta=0.1), SQUARE, True),
    ("lingape", LinGapE(delta=0.1), SQUARE, True),
    ("m-lingape-opt", MLinGapE(m=2, delta=0.1, selection="optimized"), SQUARE, True),
    ("lucb", LUCB(m=2, delta=0.1, selection="both"), SQUARE, True),
    # UGapE: same decisions, but its stopping statistic sits within rounding of 0 for many
    # steps, and the padded program's fused arithmetic rounds differently (measured: 47 % of
    # paired runs identical): tested with a two-sample test instead
    ("ugape", UGapE(m=2, delta=0.1), SQUARE, False),
]
# The suite runs a representative set (every case compiles two programs): the uniform rule
# (round robin over the real arms) and LT&S (the oracle allocation over masked arms and items) on
# the transductive instance, which pads arms and items; LinGapE's greedy gap selection and LUCB's
# top-m selection on the square instance.  Every case, UGapE's two-sample comparison included:
# ``python benchmarks/shape_buckets.py --part padding``.
SUITE_CASES = ("uniform", "lts", "lingape", "lucb")
CASES = [c for c in ALL_CASES if c[0] in SUITE_CASES]
REPS = 16
CAP = 200_000


def test_bucket_policy_and_pad_to():
    assert [bucket_size(n) for n in (1, 8, 9, 10, 16, 17, 1000)] == [8, 8, 16, 16, 16, 32, 1024]
    assert [bucket_size(n, factor=4) for n in (10, 20, 50, 100, 1000)] == [32, 32, 128, 128, 2048]
    assert {Buckets().size(k) for k in (10, 12, 14, 16)} == {16}
    p = pad_to(TRANSDUCTIVE, 8, 16)
    assert p.arms.shape == (8, 3) and p.items.shape == (16, 3) and p.is_padded
    np.testing.assert_array_equal(p.arm_mask, np.arange(8) < 5)
    np.testing.assert_array_equal(p.item_mask, np.arange(16) < 11)
    assert int(p.true_num_arms()) == 5 and int(p.true_num_items()) == 11
    np.testing.assert_array_equal(p.arms[:5], TRANSDUCTIVE.arms)
    assert not np.any(p.arms[5:]) and not np.any(p.items[11:])
    # a batch pads on its own axis; re-padding extends the masks
    b = pad_to(pad_to(jb.stack([SQUARE, SQUARE]), 8, 8), 16, 8)
    assert b.arm_mask.shape == (2, 16) and int(b.true_num_arms()[1]) == 6
    with pytest.raises(ValueError):
        pad_to(SQUARE, 4, 8)
    # an algorithm that does not declare support refuses a padded instance
    from jaxbandits.algorithms import SphereBAI
    assert not SphereBAI.supports_padding
    with pytest.raises(ValueError, match="padded"):
        jb.algorithms.GSE(budget=100).validate(pad_to(SQUARE, 8, 8))


def test_padded_items_are_never_correct_or_best():
    # every real item has a negative value: a zero (padded) item would beat them all
    inst = jb.make_instance(jnp.eye(2), jnp.array([-1.0, -2.0]), 1.0)
    p = pad_to(inst, 8, 8)
    assert int(p.best_item()) == 0
    assert bool(is_correct(jnp.arange(8) == 0, p))
    assert not bool(is_correct(jnp.arange(8) == 5, p))
    # T* (the lower bound) ignores padded arms and items (both padded here)
    np.testing.assert_allclose(characteristic_time(pad_to(TRANSDUCTIVE, 16, 16)),
                               characteristic_time(TRANSDUCTIVE), rtol=1e-9)


@pytest.mark.parametrize("name,alg,inst,exact", CASES, ids=[c[0] for c in CASES])
def test_padding_never_pulls_or_returns_padding_and_changes_nothing(name, alg, inst, exact):
    check_padded_run(alg, inst, exact)


def check_padded_run(alg, inst, exact):
    """Padded arms are never pulled, padded items never returned, the padded run repeats the
    unpadded replications (exactly, or in distribution when ``exact`` is False), and the engine's
    bucketed run reuses the padded program and reports the real shapes."""
    assert type(alg).supports_padding
    key = jax.random.key(3)
    K, M = inst.num_arms, inst.num_items
    Kb, Mb = Buckets().shape_for(inst)
    # a process deep into the suite may be near the memory-mapping limit, where the engine drops
    # its programs before compiling (jaxbandits.programs): drop them first when this case's
    # programs could take the process there, and check below that no release happened in
    # between, so that a recompilation of the bucketed run can only be a cache miss
    programs.release_if_high(0.3)
    releases = programs.releases()
    # run on the padded instance itself: the raw per-arm pulls and answers, padding included
    raw = engine.simulate(alg, pad_to(inst, Kb, Mb), key, REPS, CAP)
    assert raw.pulls.shape[-1] == Kb and raw.answer.shape[-1] == Mb
    assert raw.stopped.all()
    assert not raw.pulls[..., K:].any(), "a padded arm was pulled"
    assert not raw.answer[..., M:].any(), "a padded item was returned"
    assert (raw.answer.sum(-1) == alg.top_m).all()
    ref = engine.simulate(alg, inst, key, REPS, CAP)
    if exact:
        # the same replications: every random draw of a real arm does not depend on K
        np.testing.assert_array_equal(raw.samples, ref.samples)
        np.testing.assert_array_equal(raw.answer[..., :M], ref.answer)
        np.testing.assert_array_equal(raw.pulls[..., :K], ref.pulls)
        np.testing.assert_array_equal(raw.correct, ref.correct)
    else:
        # independent replications; same stopping-time distribution (two-sample KS), same answers
        n = 4 * REPS
        a = engine.simulate(alg, pad_to(inst, Kb, Mb), jax.random.key(11), n, CAP)
        b = engine.simulate(alg, inst, jax.random.key(12), n, CAP)
        assert sps.ks_2samp(a.samples.ravel(), b.samples.ravel()).pvalue > 1e-3
        assert abs(a.correct.mean() - b.correct.mean()) <= 0.1
    # the engine's bucketed run (the same program as ``raw``) reports the real shapes
    n = engine.programs_compiled()
    r = engine.simulate(alg, inst, key, REPS, CAP, buckets=Buckets())
    assert programs.releases() == releases
    assert engine.programs_compiled() == n
    assert r.bucket == (Kb, Mb) and r.num_arms == K and r.num_items == M
    np.testing.assert_array_equal(r.pulls, raw.pulls[..., :K])
    np.testing.assert_array_equal(r.answer, raw.answer[..., :M])


def test_padding_check_catches_a_kernel_that_ignores_masks():
    """The engine refuses results that touch padding (a mutation: round robin over all K)."""
    @dataclasses.dataclass(frozen=True)
    class Careless(UniformGLR):
        def step(self, key, state, instance):
            return super().step(key, state, instance.replace(arm_mask=None, item_mask=None))

    with pytest.raises(RuntimeError, match="padded arm"):
        engine.simulate(Careless(delta=0.1), SQUARE, jax.random.key(0), 4, CAP, buckets=Buckets())


def _easy(key, num_arms, dim=2):
    """Arm 0 = e_1 = theta, every other arm a random unit vector with x_1 <= 0 (gaps >= 1)."""
    x = jax.random.normal(key, (num_arms, dim))
    x = x.at[:, 0].set(-jnp.abs(x[:, 0])) / jnp.linalg.norm(x, axis=-1, keepdims=True)
    x = x.at[0].set(jnp.eye(dim)[0])
    return jb.make_instance(x, jnp.eye(dim)[0], 0.5)


def test_sweep_over_K_compiles_one_program_per_bucket():
    gen = jb.Generator("easy", _easy, {"num_arms": [10, 16]}, n_instances=2)
    algs = {"uniform": UniformGLR()}
    # T* of padded instances is tested above; here only the engine's programs are counted
    kw = dict(deltas=[0.1], n_reps=3, key=1, max_steps=CAP, progress=False, lower_bound=False)
    n0 = engine.programs_compiled()
    df = jb.sweep(algs, gen, **kw)
    bucketed = engine.programs_compiled() - n0
    assert bucketed == len(algs)                       # one bucket (16) per algorithm
    assert sorted(set(df["K"])) == [10, 16] and set(df["K_bucket"]) == {16}
    answers = np.asarray([int(a) for a in df["answer"]])
    assert (answers < df["K"].to_numpy()).all()
    n1 = engine.programs_compiled()
    df0 = jb.sweep(algs, gen, buckets=None, **kw)
    assert engine.programs_compiled() - n1 == 2 * len(algs)  # one per K
    # the same instances, the same replications, the same table (bucketing changes no number)
    cols = ["algorithm", "num_arms", "instance", "rep", "samples", "correct", "answer"]
    np.testing.assert_array_equal(df[cols].to_numpy(), df0[cols].to_numpy())
