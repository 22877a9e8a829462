"""Tests of the seed-paper instance generators (jaxbandits.instances.seeds) and from_data."""
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandits  # noqa: F401
from jaxbandits.instances import seeds as S
from jaxbandits.instances.base import Instance, validate_instance
from jaxbandits.instances.data import from_data, load_table, rescale_unit, ridge_theta, subsample

KEY = jax.random.PRNGKey(20240601)
NB = 64  # one batch size everywhere: every (generator, config) compiles once (tests < 30 s)

# (generator, kwargs, expected K, M, d) for every random generator; configs are shared with the
# property tests below so each compiled program is reused.
RANDOM = [
    (S.many_arms_paper, dict(num_arms=400), 400, 400, 2),
    (S.many_arms_code, dict(num_arms=400), 400, 400, 2),
    (S.many_arms_corner, dict(num_arms=400), 400, 400, 2),
    (S.sphere_rage, dict(num_arms=30, dim=10), 30, 30, 10),  # dim=10 shares sphere_gse's program
    (S.sphere_gse, dict(num_arms=30), 30, 30, 10),
    (S.sphere_odlinbai, dict(num_arms=30), 30, 30, 10),
    (S.multivariate_testing, dict(num_factors=4), 16, 16, 11),
    (S.logistic_gse, dict(num_arms=8, dim=10), 8, 8, 10),
    (S.topm_random_gaussian, dict(num_arms=10, dim=5), 10, 10, 5),
]
DETERMINISTIC = [
    (S.soare_benchmark(5), 6, 6, 5),
    (S.sphere_rage(KEY, 30, dim=10), 30, 30, 10),
    (S.soare_adaptive_gse(7), 8, 8, 7),
    (S.transductive_example(8), 8, 8, 8),
    (S.static_basis(0.2), 16, 16, 16),
    (S.topm_classic(), 4, 4, 3),
    (S.topm_hard_top1(), 3, 3, 2),
]

_CACHE = {}


def _np(inst):
    return jax.tree.map(np.asarray, inst)


def _batch(gen, **kw):
    """S.batch(gen, KEY, NB, **kw) as NumPy leaves, computed once per configuration."""
    k = (gen, tuple(sorted(kw.items())))
    if k not in _CACHE:
        _CACHE[k] = _np(S.batch(gen, KEY, NB, **kw))
    return _CACHE[k]


def _values(inst):
    return np.einsum("...md,...d->...m", np.asarray(inst.items), np.asarray(inst.theta))


def _sorted_values(inst):
    return np.sort(_values(inst))[::-1]


def _best(inst):
    return int(np.argmax(_values(inst)))


# ---------------------------------------------------------------- shapes, dtypes, batching
@pytest.mark.parametrize("gen,kw,K,M,d", RANDOM, ids=lambda x: getattr(x, "__name__", None))
def test_random_shapes_and_batch_consistency(gen, kw, K, M, d):
    b = S.batch(gen, KEY, NB, **kw)
    assert isinstance(b, Instance) and b.batch_shape == (NB,)
    assert b.arms.shape == (NB, K, d) and b.items.shape == (NB, M, d)
    assert b.theta.shape == (NB, d) and b.noise.shape == (NB,)
    for leaf in (b.arms, b.items, b.theta, b.noise):
        assert leaf.dtype == jnp.float64
    validate_instance(b)
    bn = _batch(gen, **kw)
    for j in (0, NB - 1):
        single = gen(jax.random.fold_in(KEY, j), **kw)
        assert single.arms.shape == (K, d) and single.theta.shape == (d,) and single.noise.shape == ()
        for x, y in zip(jax.tree.leaves(bn[j]), jax.tree.leaves(single)):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    # distinct keys give distinct instances
    assert not np.allclose(bn.arms[0], bn.arms[1]) or not np.allclose(bn.theta[0], bn.theta[1])


def test_batch_independent_of_size():
    small = S.batch(S.many_arms_code, KEY, 3, num_arms=400)
    np.testing.assert_array_equal(small.arms, _batch(S.many_arms_code, num_arms=400).arms[:3])
    with pytest.raises(ValueError):
        S.batch(S.many_arms_code, KEY, 0, num_arms=5)


@pytest.mark.parametrize("inst,K,M,d", DETERMINISTIC)
def test_deterministic_shapes(inst, K, M, d):
    assert inst.arms.shape == (K, d) and inst.items.shape == (M, d) and inst.theta.shape == (d,)
    assert inst.arms.dtype == jnp.float64
    validate_instance(inst, need_span=True)


def test_jit_vmap_and_no_recompilation():
    traces = []

    def gen(k):
        traces.append(1)
        return S.multivariate_testing(k, 4)

    f = jax.jit(jax.vmap(gen))
    keys = jax.vmap(lambda j: jax.random.fold_in(KEY, j))(jnp.arange(NB))
    v = f(keys)
    f(jax.random.split(KEY, NB))
    assert len(traces) == 1
    np.testing.assert_allclose(v.theta, _batch(S.multivariate_testing, num_factors=4).theta, rtol=1e-12)
    np.testing.assert_allclose(v.arms, _batch(S.multivariate_testing, num_factors=4).arms, rtol=1e-12)
    # the eager generators are jitted: a second call with a new key does not retrace
    S.many_arms_code(jax.random.fold_in(KEY, 7), num_arms=400)
    n0 = S.many_arms_code._cache_size()
    S.many_arms_code(jax.random.fold_in(KEY, 8), num_arms=400)
    assert S.many_arms_code._cache_size() == n0


# ---------------------------------------------------------------- 1. Soare benchmark
def test_soare_benchmark_gap():
    inst = S.soare_benchmark(5)
    X = np.asarray(inst.arms)
    np.testing.assert_allclose(X[:5], np.eye(5))
    np.testing.assert_allclose(X[5], [math.cos(0.01), math.sin(0.01), 0, 0, 0])
    np.testing.assert_allclose(inst.theta, [2, 0, 0, 0, 0])
    assert _best(inst) == 0 and float(inst.noise) == 1.0
    v = _values(inst)
    gap = v[0] - v[5]
    assert gap == pytest.approx(2 * (1 - math.cos(0.01)), rel=1e-9)
    assert gap == pytest.approx(1e-4, rel=1e-3)
    assert _sorted_values(inst)[1] == pytest.approx(v[5])  # the near arm is the runner-up


def test_soare_adaptive_gse():
    inst = S.soare_adaptive_gse(7)
    assert float(inst.noise) ** 2 == pytest.approx(10.0)
    v = _sorted_values(inst)
    assert v[0] - v[1] == pytest.approx(1 - math.cos(0.1), rel=1e-9)
    np.testing.assert_allclose(inst.theta, np.eye(7)[0])


# ---------------------------------------------------------------- 2. many arms
def test_many_arms_code_construction():
    b = _batch(S.many_arms_code, num_arms=400)
    X = b.arms
    np.testing.assert_allclose(X[:, 0], np.broadcast_to([1.0, 0.0], (NB, 2)))
    np.testing.assert_allclose(X[:, 1], np.broadcast_to([-0.707, 0.707], (NB, 2)))
    ang = np.arctan2(X[:, 2:, 1], X[:, 2:, 0])
    assert ang.min() >= 0.78 and ang.max() < 0.88
    np.testing.assert_allclose(np.linalg.norm(X[:, 2:], axis=-1), 1.0)
    gaps = 1.0 - _values(b)[:, 1:]
    assert np.all(np.argmax(_values(b), axis=1) == 0) and gaps.min() > 0.28
    # uniform angles: mean 0.83, sd 0.1/sqrt(12); 5-standard-error tolerance
    assert abs(ang.mean() - 0.83) < 5 * 0.1 / math.sqrt(12 * ang.size)


@pytest.mark.parametrize("gen,std", [(S.many_arms_paper, 0.3), (S.many_arms_corner, 0.09)])
def test_many_arms_paper_angle_std(gen, std):
    b = _batch(gen, num_arms=400)
    X = b.arms
    np.testing.assert_allclose(X[:, 1], np.broadcast_to(
        [math.cos(3 * math.pi / 4), math.sin(3 * math.pi / 4)], (NB, 2)))
    phi = (np.arctan2(X[:, 2:, 1], X[:, 2:, 0]) - math.pi / 4).ravel()
    assert abs(phi.std() - std) < 5 * std / math.sqrt(2 * phi.size)
    assert abs(phi.mean()) < 5 * std / math.sqrt(phi.size)
    assert np.all(np.argmax(_values(b), axis=1) == 0)
    # the expected gap of the look-alike arms is ~0.3 in both readings (seed 001 Sec 5)
    assert abs(np.mean(1 - X[:, 2:, 0]) - 0.3) < 0.03
    assert np.all(b.noise == 1.0)


# ---------------------------------------------------------------- 3. sphere
def _brute_closest(X):
    best, pair = np.inf, None
    for i, j in itertools.combinations(range(len(X)), 2):
        dd = np.linalg.norm(X[i] - X[j])
        if dd < best:
            best, pair = dd, (i, j)
    return pair


@pytest.mark.parametrize("gen,alpha,var", [(S.sphere_rage, 0.0, 1.0), (S.sphere_gse, 0.01, 10.0),
                                           (S.sphere_odlinbai, 0.01, 1.0)])
def test_sphere_theta_construction(gen, alpha, var):
    b = _batch(gen, num_arms=30, dim=10) if gen is S.sphere_rage else _batch(gen, num_arms=30)
    np.testing.assert_allclose(b.noise ** 2, var)
    for j in range(0, NB, 8):
        inst = b[j]
        X = inst.arms
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-12)
        i, k = _brute_closest(X)
        np.testing.assert_allclose(inst.theta, X[i] + alpha * (X[k] - X[i]), rtol=1e-12, atol=1e-14)
        v = _values(inst)
        order = np.argsort(v)[::-1]
        assert order[0] == i and order[1] == k  # x_i best, x_j the disturbing runner-up
        assert v[i] - v[k] == pytest.approx((1 - 2 * alpha) * (1 - X[i] @ X[k]), rel=1e-9)
    # uniform on the sphere: every coordinate has mean 0 and variance 1/d
    d = b.arms.shape[-1]
    flat = b.arms.reshape(-1, d)
    assert np.all(np.abs(flat.mean(axis=0)) < 5 / math.sqrt(d * len(flat)))


def test_closest_pair():
    X = jnp.array([[0.0, 0.0], [3.0, 0.0], [0.0, 1.0], [3.0, 0.5]])
    assert tuple(int(t) for t in S.closest_pair(X)) == (1, 3)


# ---------------------------------------------------------------- 4. transductive
def test_transductive_example():
    d = 10
    inst = S.transductive_example(d)
    np.testing.assert_allclose(inst.arms, np.eye(d))
    Z = np.asarray(inst.items)
    np.testing.assert_allclose(Z[:5], np.eye(d)[:5])
    for j in range(5):
        np.testing.assert_allclose(Z[5 + j], math.cos(0.1) * np.eye(d)[j] + math.sin(0.1) * np.eye(d)[j + 5])
    assert _best(inst) == 0
    v = _sorted_values(inst)
    assert v[0] - v[1] == pytest.approx(1 - math.cos(0.1), rel=1e-9)
    with pytest.raises(ValueError):
        S.transductive_example(7)


# ---------------------------------------------------------------- 5. multivariate testing
@pytest.mark.parametrize("D", [2, 3, 5])
def test_factorial_features(D):
    X = np.asarray(S.factorial_features(D))
    p = 1 + D + D * (D - 1) // 2
    assert X.shape == (2 ** D, p)
    assert set(np.unique(X)) <= {-1.0, 1.0}
    assert len({tuple(r) for r in X}) == 2 ** D
    W = np.array(list(itertools.product([-1, 1], repeat=D)), float)
    np.testing.assert_array_equal(X[:, 0], 1)
    np.testing.assert_array_equal(X[:, 1:D + 1], W)
    cols = [W[:, k] * W[:, l] for k, l in itertools.combinations(range(D), 2)]
    if cols:
        np.testing.assert_array_equal(X[:, D + 1:], np.stack(cols, 1))


def test_multivariate_testing_theta():
    D = 4
    b = _batch(S.multivariate_testing, num_factors=D)
    np.testing.assert_array_equal(b.arms[0], S.factorial_features(D))
    scale = np.r_[1.0, np.ones(D), 0.5 * np.ones(D * (D - 1) // 2)]
    raw = b.theta / scale
    assert np.all(np.abs(raw) <= 0.3 + 1e-12)
    np.testing.assert_allclose(raw * 100, np.round(raw * 100), atol=1e-9)  # 0.01 grid
    vals = np.sort(_values(b), axis=1)
    assert np.all(vals[:, -1] - vals[:, -2] >= 1e-5)
    # the grid is uniform on 61 levels: mean 0, variance (61^2 - 1)/12 * 0.01^2
    sd = math.sqrt((61 ** 2 - 1) / 12) * 0.01
    assert abs(raw.mean()) < 5 * sd / math.sqrt(raw.size)
    assert abs(raw.std() - sd) < 5 * sd / math.sqrt(raw.size)


# ---------------------------------------------------------------- 6. static
def test_static_basis():
    inst = S.static_basis(0.3)
    v = _values(inst)
    assert v[0] == pytest.approx(0.3) and np.all(v[1:] == 0)
    assert inst.num_arms == 16 and inst.dim == 16


# ---------------------------------------------------------------- 7. logistic
def test_logistic_gse_distribution():
    d = 10
    b = S.batch(S.logistic_gse, KEY, NB, num_arms=8, dim=d)
    assert b.model == "logistic"
    b = _batch(S.logistic_gse, num_arms=8, dim=d)
    X = b.arms
    assert X.min() >= -0.5 and X.max() <= 0.5
    th = b.theta.ravel()
    # theta ~ N(0, 3/d I): sample variance within 5 standard errors (var of s^2 ~ 2 s^4 / n)
    var = 3 / d
    assert abs(th.var() - var) < 5 * var * math.sqrt(2 / th.size)
    assert abs(X.var() - 1 / 12) < 5 * math.sqrt((1 / 80 - 1 / 144) / X.size)


# ---------------------------------------------------------------- 8. top-m
def test_topm_classic():
    inst = S.topm_classic()
    v = _values(inst)
    np.testing.assert_allclose(v, [1, 1, math.cos(math.pi / 6), 0], atol=1e-15)
    assert v[1] - v[2] == pytest.approx(0.134, abs=1e-3)  # seed 003 Sec 5: ~0.13
    assert float(inst.noise) == 0.5
    inst3 = S.topm_classic(4, 2, omega=math.pi / 3)
    assert _sorted_values(inst3)[2] == pytest.approx(0.5)
    big = S.topm_classic(7, 3, omega=0.2)
    np.testing.assert_allclose(_values(big), [1, 1, 1, math.cos(0.2), 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(np.asarray(big.arms)[4:], np.eye(6)[3:])  # x_a = e_{a-1}, a > m+1
    validate_instance(big, need_span=True)
    with pytest.raises(ValueError):
        S.topm_classic(3, 2)


def test_topm_hard_top1():
    inst = S.topm_hard_top1()
    X = np.asarray(inst.arms)
    assert {tuple(np.round(r, 12)) for r in X} == {(1.0, 0.0), (0.0, 1.0),
                                                  (round(math.cos(0.1), 12), round(math.sin(0.1), 12))}
    v = _sorted_values(inst)
    assert v[0] - v[1] == pytest.approx(0.005, abs=1e-4)


def test_topm_random_gaussian_and_table4():
    b = _batch(S.topm_random_gaussian, num_arms=10, dim=5)
    assert np.allclose([np.linalg.norm(x, 2) for x in b.arms], 1.0, rtol=1e-10)
    np.testing.assert_allclose(b.theta, np.broadcast_to(np.eye(5)[0], (NB, 5)))
    # spectral normalization is scale-free: D only rescales before normalizing
    a = S.topm_random_gaussian(KEY, 10, 5, D=0.25).arms
    c = S.topm_random_gaussian(KEY, 10, 5, D=0.5).arms
    np.testing.assert_allclose(a, c, rtol=1e-10)
    col = S.topm_random_gaussian(KEY, 10, 5, normalize="columns")
    np.testing.assert_allclose(np.linalg.norm(np.asarray(col.arms), axis=1), 1.0)
    np.testing.assert_allclose(np.asarray(col.arms) * np.linalg.norm(np.asarray(col.arms), axis=1)[:, None],
                               np.asarray(col.arms))
    assert [(s["K"], s["m"]) for s in S.TOPM_TABLE4][::5] == [(10, 4), (10, 4), (20, 7)]
    assert {s["m"] for s in S.TOPM_TABLE4 if s["K"] == 30} == {11}
    assert len(S.TOPM_TABLE4) == 15 and S.topm_table4_m(20) == 7
    with pytest.raises(ValueError):
        S.topm_random_gaussian(KEY, normalize="rows")


# ---------------------------------------------------------------- 9. from_data
def _table(n=30, p=3, seed=0):
    rng = np.random.default_rng(seed)
    F = rng.uniform(-5, 20, (n, p))
    y = F @ np.array([1.0, -2.0, 0.5][:p]) + rng.normal(0, 0.1, n)
    return F, y


def test_from_data_numpy_rescale_and_fit():
    F, y = _table()
    inst = from_data(F, y, noise=0.1)
    X = np.asarray(inst.arms)
    assert X.min() == 0.0 and X.max() == 1.0
    np.testing.assert_allclose(X.min(0), 0) and np.testing.assert_allclose(X.max(0), 1)
    np.testing.assert_allclose(inst.items, inst.arms)
    ref = np.linalg.solve(X.T @ X + 0.01 * np.eye(3), X.T @ y)
    np.testing.assert_allclose(inst.theta, ref, rtol=1e-10)
    assert float(inst.noise) == 0.1
    # with an intercept and tiny regularization, ridge = ordinary least squares
    inst2 = from_data(F, y, noise=1.0, intercept=True, reg=1e-10)
    X2 = np.asarray(inst2.arms)
    assert X2.shape == (30, 4) and np.all(X2[:, -1] == 1)
    ols = np.linalg.lstsq(X2, y, rcond=None)[0]
    np.testing.assert_allclose(inst2.theta, ols, rtol=1e-6, atol=1e-8)
    # no rescale keeps raw features; constant columns rescale to 0
    np.testing.assert_allclose(from_data(F, y, noise=1.0, rescale=False).arms, F)
    Fc = np.c_[F, np.full(30, 7.0)]
    assert np.all(rescale_unit(Fc)[:, -1] == 0)
    np.testing.assert_allclose(ridge_theta(X, y, 0.01), ref)


def test_from_data_target_column_and_columns():
    F, y = _table()
    T = np.c_[F, y]
    inst = from_data(T, target=3, noise=1.0)
    np.testing.assert_allclose(inst.theta, from_data(F, y, noise=1.0).theta)
    inst = from_data(T, target=-1, columns=[0, 2], noise=1.0)
    assert inst.dim == 2
    with pytest.raises(ValueError):
        from_data(T, target=3, columns=[0, 3], noise=1.0)
    with pytest.raises(ValueError):
        from_data(F, noise=1.0)  # no targets


def test_from_data_csv(tmp_path):
    F, y = _table(n=12)
    path = tmp_path / "cars.csv"
    with open(path, "w") as f:
        f.write("make,weight,width,engine,price\n")
        for i in range(12):
            f.write(f"car{i},{float(F[i, 0])!r},{float(F[i, 1])!r},{float(F[i, 2])!r},{float(y[i])!r}\n")
    inst = from_data(str(path), target="price", columns=["weight", "width", "engine"], noise=0.1)
    ref = from_data(F, y, noise=0.1)
    np.testing.assert_allclose(inst.arms, ref.arms, rtol=1e-12)
    np.testing.assert_allclose(inst.theta, ref.theta, rtol=1e-10)
    # a headerless numeric CSV, columns by index
    p2 = tmp_path / "plain.csv"
    np.savetxt(p2, np.c_[F, y], delimiter=",")
    inst2 = from_data(p2, target=3, noise=0.1)
    np.testing.assert_allclose(inst2.theta, ref.theta, rtol=1e-10)
    # missing values: error unless dropna
    p3 = tmp_path / "missing.csv"
    with open(p3, "w") as f:
        f.write("a,b,y\n1,2,3\n?,1,2\n4,0,1\n2,2,2\n")
    with pytest.raises(ValueError, match="missing"):
        from_data(p3, target="y", noise=1.0)
    X3, y3, names = load_table(p3, target="y", dropna=True)
    assert X3.shape == (3, 2) and names == ["a", "b"]
    with pytest.raises(ValueError, match="not found"):
        from_data(p3, target="price", noise=1.0)
    # a row with more fields than the header, and an empty file: errors that name the file
    p4 = tmp_path / "ragged.csv"
    p4.write_text("a,b,y\n1,2,3\n1,2,3,4\n")
    with pytest.raises(ValueError, match="ragged.csv"):
        load_table(p4, target="y")
    p5 = tmp_path / "empty.csv"
    p5.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_table(p5)


class _FakeFrame:
    """Duck-typed DataFrame: only .to_numpy() and .columns."""

    def __init__(self, arr, cols):
        self._a, self.columns = arr, cols

    def to_numpy(self):
        return self._a


def test_from_data_dataframe_like():
    F, y = _table()
    df = _FakeFrame(np.c_[F, y].astype(object), ["a", "b", "c", "y"])
    inst = from_data(df, target="y", noise=0.5)
    np.testing.assert_allclose(inst.theta, from_data(F, y, noise=0.5).theta, rtol=1e-10)
    inst = from_data(_FakeFrame(F, ["a", "b", "c"]), _FakeFrame(y, ["y"]), columns=["c", "a"], noise=0.5)
    np.testing.assert_allclose(inst.arms, rescale_unit(F[:, [2, 0]]))


def test_from_data_subsample():
    F, y = _table(n=200, seed=3)
    full = from_data(F, y, noise=1.0)
    v = np.asarray(full.arms) @ np.asarray(full.theta)
    k = jax.random.PRNGKey(5)
    sub = from_data(F, y, noise=1.0, num_arms=40, key=k, include_best=True, min_gap=0.5)
    assert sub.arms.shape == (40, 3)
    sv = np.asarray(sub.arms) @ np.asarray(full.theta)
    assert sv[0] == pytest.approx(v.max())
    assert np.all(sv[1:] <= v.max() - 0.5)
    rows = [int(np.argmin(np.linalg.norm(np.asarray(full.arms) - r, axis=1))) for r in np.asarray(sub.arms)]
    assert len(set(rows)) == 40  # without replacement
    # plain subsampling: batched == single with fold_in, and jit/vmap safe
    b = _np(S.batch(subsample, k, NB, instance=full, num_arms=10))
    for j in (0, NB - 1):
        np.testing.assert_allclose(b[j].arms, subsample(jax.random.fold_in(k, j), full, 10).arms)
    # each row is kept with probability K/n: binomial check over many draws
    cnt = np.zeros(200)
    for r in b.arms.reshape(-1, 3):
        cnt[int(np.argmin(np.linalg.norm(np.asarray(full.arms) - r, axis=1)))] += 1
    p = 10 / 200
    assert cnt.sum() == NB * 10  # exactly K rows per draw
    assert np.all(np.abs(cnt - NB * p) < 6 * math.sqrt(NB * p * (1 - p)))
    with pytest.raises(ValueError):
        from_data(F, y, noise=1.0, num_arms=10)  # no key
    with pytest.raises(ValueError, match="gap"):
        from_data(F, y, noise=1.0, num_arms=199, key=k, include_best=True, min_gap=5.0)


def test_from_data_bernoulli_model():
    rng = np.random.default_rng(1)
    F = rng.uniform(size=(50, 4))
    clicks = (rng.uniform(size=50) < 0.05).astype(float)
    inst = from_data(F, clicks, noise=1.0, model="bernoulli", rescale=False)
    assert inst.model == "bernoulli"
    validate_instance(inst)
