"""jaxbandits.sweep: a grid as a tidy table, paired instances, lower bounds, resume from disk."""
import jax
import numpy as np
import pytest

import jaxbandits as jb
from jaxbandits import engine
from jaxbandits.algorithms import UniformGLR
from jaxbandits.instances import seeds
from jaxbandits.stats import kl_bernoulli
from jaxbandits.sweeps import per_instance_ratio, summary


def _run(out):
    # a grid over the noise scale: one instance shape, so one program of each kind serves it all
    gen = jb.Generator("sphere", seeds.unit_sphere, {"noise": [0.5, 1.0]}, n_instances=2,
                       fixed=dict(num_arms=3, dim=2, alpha=0.0))
    # a configured algorithm (its delta replaced) and a factory delta -> algorithm; both are
    # the same configuration, so one program serves both (and they must agree run for run)
    return jb.sweep({"uniform": UniformGLR(u=0.5), "factory": lambda d: UniformGLR(delta=d, u=0.5)}, gen,
                    deltas=[0.2], n_reps=3, key=jax.random.key(1), max_steps=3000, out=out, progress=False)


def test_sweep_table_resume_and_lower_bounds(tmp_path):
    df = _run(tmp_path)
    assert len(df) == 2 * 2 * 2 * 3  # algorithms x noise scales x instances x reps
    for c in ("algorithm", "generator", "d", "delta", "instance", "rep", "samples", "correct", "stopped",
              "noise", "T_star", "lower_bound"):
        assert c in df.columns, c
    assert set(df["noise"]) == {0.5, 1.0} and set(df["delta"]) == {0.2}
    # both algorithms saw the same instances (T* per (noise, instance) identical across algorithms)
    t = df.groupby(["noise", "instance"])["T_star"].nunique()
    assert (t == 1).all()
    # ... but independent replications (the configuration's label keys its runs)
    a, b = (df[df["algorithm"] == n].sort_values(["noise", "instance", "rep"]) for n in ("uniform", "factory"))
    assert (a["samples"].to_numpy() != b["samples"].to_numpy()).any()
    # sigma^2 T* kl(delta, 1 - delta), with each row's own noise scale
    np.testing.assert_allclose(df["lower_bound"], df["noise"] ** 2 * df["T_star"] * kl_bernoulli(0.2, 0.8),
                               rtol=1e-12)
    # the runs are the engine's: capped runs are kept and counted, never dropped
    s = summary(df, ["algorithm", "noise"])
    assert (s["runs"] == 6).all()
    assert ((s["frac_capped"] > 0) == s["ratio"].isna()).all()
    assert (s["ratio_at_least"] > 0).all()
    r = per_instance_ratio(df, ["algorithm", "noise"])
    assert len(r) == 8
    # a rerun reads everything back: nothing compiled, no instance drawn, the same table
    n = engine.programs_compiled()
    df2 = _run(tmp_path)
    assert engine.programs_compiled() == n
    cols = ["algorithm", "noise", "instance", "rep", "samples", "correct", "stopped", "T_star", "noise",
            "lower_bound", "K", "d", "M", "K_bucket"]
    np.testing.assert_array_equal(df[cols].to_numpy(), df2[cols].to_numpy())
    draws = []

    def counted(key, **kw):
        draws.append(kw)
        return seeds.unit_sphere(key, **kw)

    gen = jb.Generator("sphere", counted, {"noise": [0.5, 1.0]}, n_instances=2, fixed=dict(num_arms=3, dim=2, alpha=0.0))
    df_read = jb.sweep({"uniform": UniformGLR(u=0.5), "factory": lambda d: UniformGLR(delta=d, u=0.5)}, gen,
                       deltas=[0.2], n_reps=3, key=jax.random.key(1), max_steps=3000, out=tmp_path, progress=False)
    assert draws == []
    np.testing.assert_array_equal(df[cols].to_numpy(), df_read[cols].to_numpy())
    # resume_only: what is complete on disk, nothing run or drawn; a configuration not on disk is
    # left out with a warning
    n = engine.programs_compiled()
    with pytest.warns(UserWarning, match="not complete on disk"):
        df_only = jb.sweep({"uniform": UniformGLR(u=0.5), "new": UniformGLR(u=0.25)}, gen, deltas=[0.2], n_reps=3,
                           key=jax.random.key(1), max_steps=3000, out=tmp_path, progress=False, resume_only=True)
    assert engine.programs_compiled() == n and draws == []
    assert set(df_only["algorithm"]) == {"uniform"}
    # a partial file resumes: drop the last rows and rerun, only the missing ones are recomputed
    rows = (tmp_path / "rows.csv").read_text().splitlines()
    (tmp_path / "rows.csv").write_text("\n".join(rows[:-4]) + "\n")
    df3 = _run(tmp_path)
    np.testing.assert_array_equal(df[cols].to_numpy(), df3[cols].to_numpy())
    # ``where`` leaves configurations out (here: "factory" at noise 1); the others read back as they were
    gen = jb.Generator("sphere", seeds.unit_sphere, {"noise": [0.5, 1.0]}, n_instances=2,
                       fixed=dict(num_arms=3, dim=2, alpha=0.0))
    df4 = jb.sweep({"uniform": UniformGLR(u=0.5), "factory": lambda d: UniformGLR(delta=d, u=0.5)}, gen,
                   deltas=[0.2], n_reps=3, key=jax.random.key(1), max_steps=3000, out=tmp_path, progress=False,
                   where=lambda name, p: not (name == "factory" and p["noise"] == 1.0))
    assert len(df4) == 3 * 2 * 3 and not ((df4["algorithm"] == "factory") & (df4["noise"] == 1.0)).any()
    kept = df[~((df["algorithm"] == "factory") & (df["noise"] == 1.0))]
    np.testing.assert_array_equal(kept[cols].to_numpy(), df4[cols].to_numpy())


def test_paired_sweep_gives_every_algorithm_the_same_keys():
    """``paired=True``: the two names of one configuration run on the same keys (identical runs),
    and a wrapper that only adds a stopping rule (elimination at stopping) never stops later."""
    from jaxbandits.algorithms import Eliminate

    gen = jb.Generator("sphere", seeds.unit_sphere, {"noise": [0.5]}, n_instances=2,
                       fixed=dict(num_arms=3, dim=2, alpha=0.0))
    algs = {"a": lambda d: UniformGLR(delta=d, u=0.5), "b": lambda d: UniformGLR(delta=d, u=0.5),
            "elim": lambda d: Eliminate(UniformGLR(delta=d, u=0.5))}
    df = jb.sweep(algs, gen, deltas=[0.2], n_reps=3, key=jax.random.key(2), max_steps=3000, progress=False,
                  paired=True, lower_bound=False)
    a, b, e = (df[df["algorithm"] == n].sort_values(["instance", "rep"])["samples"].to_numpy() for n in algs)
    np.testing.assert_array_equal(a, b)
    assert np.all(e <= a)


def _table():
    """A made-up sweep table: two algorithms x K in {4, 8} x 2 instances x 3 replications, with
    stopping times, errors and one capped run known in advance."""
    import pandas as pd

    rows = []
    for a, scale in (("A", 1.0), ("B", 3.0)):
        for K in (4, 8):
            for j in range(2):
                for i in range(3):
                    rows.append(dict(algorithm=a, num_arms=K, instance=j, rep=i, samples=scale * K * (10 + i + j),
                                     correct=not (a == "B" and i == 0), stopped=not (a == "A" and K == 8 and i == 2),
                                     lower_bound=2.0 * K))
    return pd.DataFrame(rows)


def _data_lines(ax):
    """The data line of every error-bar series (not its caps and bars), in drawing order."""
    return [c.lines[0] for c in ax.containers]


def test_plots_draw_the_summary():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxbandits.sweeps import plot_error_rate, plot_ratio_distribution, plot_sample_complexity

    df = _table()
    s = summary(df, ["algorithm", "num_arms"])
    ax = plot_sample_complexity(df, "num_arms")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_yscale()) == ("num_arms", "mean sample complexity (pulls)", "log")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A", "B"]
    for line, name in zip(_data_lines(ax), ["A", "B"]):
        np.testing.assert_allclose(np.asarray(line.get_ydata(), float), s.loc[s["algorithm"] == name, "mean"])
    plt.close(ax.figure)
    ax = plot_sample_complexity(df, "num_arms", ratio=True, logy=False)
    assert ax.get_ylabel() == "E[tau] / lower bound" and ax.get_yscale() == "linear"
    # A at K = 8 has a capped run: its ratio is not defined (the stopped-run mean is biased low)
    # (mean of K (10 + i + j) = 11.5 K, times 3 for B, over the lower bound 2 K)
    np.testing.assert_allclose(np.asarray(_data_lines(ax)[0].get_ydata(), float), [5.75, np.nan])
    np.testing.assert_allclose(np.asarray(_data_lines(ax)[1].get_ydata(), float), [17.25, 17.25])
    plt.close(ax.figure)
    ax = plot_error_rate(df, "num_arms", delta=0.1)
    assert ax.get_ylabel() == "error rate (95 % Clopper-Pearson)"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["A", "B", "delta = 0.1"]
    np.testing.assert_allclose(np.asarray(_data_lines(ax)[1].get_ydata(), float), [1 / 3, 1 / 3])  # B errs on rep 0
    plt.close(ax.figure)
    ax = plot_ratio_distribution(df)
    assert ax.get_xlabel() == "E[tau] / lower bound, per instance" and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B"]
    plt.close(ax.figure)




def fixed_k_armed(key, *, model, K):
    """The K-armed instance of means (0.7, 0.5, 0.4, ...)[:K] whatever the key (a generator)."""
    from jaxbandits.instances import k_armed

    del key
    return k_armed([0.7, 0.5, 0.4, 0.35][:K], model, noise=0.5)


def test_bernoulli_k_armed_instances_get_the_bernoulli_lower_bound(tmp_path):
    """On K-armed Bernoulli instances the table's T* is the Bernoulli family's T*(mu) (Garivier &
    Kaufmann 2016, Theorem 1) and the lower bound T*(mu) kl(delta, 1 - delta), not the Gaussian
    sigma^2 T*(theta); Gaussian K-armed instances keep sigma^2 T*(theta).  A rerun reads the unit
    back from disk."""
    import jax.numpy as jnp

    from jaxbandits.algorithms import KArmedLilUCB
    from jaxbandits.design import karmed

    def run(model):
        gen = jb.Generator(f"k-armed-{model}", fixed_k_armed, {"K": [3]}, n_instances=2, fixed=dict(model=model))
        return jb.sweep({"lil": KArmedLilUCB(preset="heuristic")}, gen, deltas=[0.1], n_reps=2, key=jax.random.key(0),
                        max_steps=20_000, out=tmp_path / model, progress=False)

    kl = kl_bernoulli(0.1, 0.9)
    mu = jnp.array([0.7, 0.5, 0.4])
    bern, gauss = float(karmed.characteristic_time(mu, "bernoulli")), float(karmed.characteristic_time(mu, "gaussian"))
    assert abs(bern - gauss) > 0.05 * bern  # the check can tell them apart
    df = run("bernoulli")
    np.testing.assert_allclose(df["T_star"], bern, rtol=1e-6)
    np.testing.assert_allclose(df["lower_bound"], bern * kl, rtol=1e-6)
    again = run("bernoulli")  # read back: the unit from instance_meta.csv
    np.testing.assert_array_equal(df["lower_bound"].to_numpy(), again["lower_bound"].to_numpy())
    g = run("gaussian")  # sigma = 1/2: sigma^2 T*(theta) with T* of unit variance
    np.testing.assert_allclose(g["T_star"], gauss, rtol=1e-6)
    np.testing.assert_allclose(g["lower_bound"], 0.25 * gauss * kl, rtol=1e-6)


def _hetero_k_armed(key, K, **_):
    from jaxbandits.instances import k_armed

    del key
    return k_armed([1.0, 0.5, 0.3][:K], "gaussian", noise=[0.8, 0.5, 1.2][:K])


def test_heteroscedastic_k_armed_instances_get_the_heteroscedastic_lower_bound(tmp_path):
    """On K-armed Gaussian instances with per-arm noise the table's T* is T*(mu, sigma^2) of the
    arms' own variances (:func:`jaxbandits.design.karmed.heteroscedastic_weights`) and the lower
    bound T*(mu, sigma^2) kl(delta, 1 - delta), not (max sigma)^2 T*(mu) of unit variance (which
    is larger here); a rerun reads the unit back from disk."""
    import jax.numpy as jnp

    from jaxbandits.algorithms import KArmedTopTwo
    from jaxbandits.design import karmed

    def run():
        gen = jb.Generator("k-armed-hetero", _hetero_k_armed, {"K": [3]}, n_instances=2)
        return jb.sweep({"tt": KArmedTopTwo(variances="known")}, gen, deltas=[0.1], n_reps=2,
                        key=jax.random.key(0), max_steps=20_000, out=tmp_path / "h", progress=False)

    kl = kl_bernoulli(0.1, 0.9)
    mu, sd = jnp.array([1.0, 0.5, 0.3]), jnp.array([0.8, 0.5, 1.2])
    hetero = float(karmed.heteroscedastic_weights(mu, sd).value)
    worst = 1.2**2 * float(karmed.characteristic_time(mu, "gaussian"))
    assert worst > 1.2 * hetero  # the check can tell them apart
    df = run()
    np.testing.assert_allclose(df["T_star"], hetero, rtol=1e-6)
    np.testing.assert_allclose(df["lower_bound"], hetero * kl, rtol=1e-6)
    again = run()
    np.testing.assert_array_equal(df["lower_bound"].to_numpy(), again["lower_bound"].to_numpy())
