"""Per-replication hashes of every public algorithm and preset: the refactoring guard.

A change that moves algorithm or engine code must keep every replication bit-identical.  This
script runs each exported algorithm (with its defaults, or the configuration ``tests/test_contract``
uses where the constructor needs arguments) and each preset (``released_code()``, ``paper()``,
``tirinzoni_degenne()``, the elimination variants, seed 003 Fig. 1(a)'s GIFA line-up) on a small
instance of its family, and hashes per replication the sample count, the answer mask and the
per-arm pulls.  ``--write`` stores them in ``benchmarks/replication_hashes.json``; ``--check``
(the default) recomputes and lists every configuration whose hash moved, exiting 1 if any did.

    python benchmarks/replication_hashes.py --write     # on the commit before a refactor
    python benchmarks/replication_hashes.py             # after every commit of it

About 5 minutes on 2 CPU cores (one program per configuration; the persistent compilation cache
is off so a cached program cannot hide a change).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pathlib
import sys

import numpy as np

FIXTURE = pathlib.Path(__file__).with_name("replication_hashes.json")
N_REPS = 24
MAX_STEPS = 3000
BUDGET = 60


def configurations():
    """(label, algorithm, instance) for every public algorithm and preset."""
    import jax
    import jax.numpy as jnp

    import jaxbandits.algorithms as A
    from jaxbandits.algorithms.base import Algorithm, Wrapper
    from jaxbandits.algorithms.fixed_confidence import fixed_weights, td_variants
    from jaxbandits.algorithms.fixed_confidence.sphere import sphere_instance
    from experiments.seed003_fig1 import fig1a_algorithms
    from jaxbandits.instances.base import make_instance

    X = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-0.3, 0.9]])
    gaussian = make_instance(X, jnp.array([1.0, 0.4]), 0.5)
    bernoulli = make_instance(X, jnp.array([0.8, 0.3]), 1.0, model="bernoulli")
    sphere = sphere_instance(jax.random.PRNGKey(0), jnp.array([1.0, 0.3]), num_items=6)
    special = {"GIFA": lambda: A.GIFA(m=2), "LUCB": lambda: A.LUCB(2), "UGapE": lambda: A.UGapE(2),
               "MLinGapE": lambda: A.MLinGapE(2), "LinGIFA": lambda: A.LinGIFA(2),
               "Eliminate": lambda: A.Eliminate(A.LazyTrackAndStop()),
               "BudgetCapped": lambda: A.BudgetCapped(A.MLinGapE(2), BUDGET)}
    karmed = make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 1.0, model="bernoulli")
    instance_of = {"UCBGLM": bernoulli, "SphereBAI": sphere,
                   **{n: karmed for n in ("KArmedTrackAndStop", "KArmedTopTwo", "KArmedKLLUCB", "SuccessiveElimination",
                                          "SuccessiveRejects", "SequentialHalving", "KArmedLUCB1",
                                          "KArmedLilUCB")},
                   # Gaussian arms only (EB-TCε)
                   "KArmedEBTCEpsilon": make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 0.5)}
    out = []
    for name, cls in sorted(vars(A).items()):
        if not (isinstance(cls, type) and issubclass(cls, Algorithm)) or cls in (Algorithm, Wrapper):
            continue
        if name in special:
            alg = special[name]()
        else:
            required = {f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING}
            alg = cls(**({"budget": BUDGET} if required == {"budget"} else {}))
        inst = instance_of.get(name, gaussian)
        out.append((name, alg, inst))
        if getattr(cls, "released_settings", None) is not None:
            out.append((f"{name}.released_code", alg.released_code(), inst))
    out.append(("LazyTrackAndStop.paper", A.LazyTrackAndStop.paper(), gaussian))
    for cls in (td_variants.CumulativeRAGE, td_variants.GlobalXYAdaptive, fixed_weights.FixedWeightsOracle,
                A.FWS, A.LinGame):
        out.append((f"{cls.__name__}.tirinzoni_degenne", cls.tirinzoni_degenne(), gaussian))
    out.append(("LinGame.tirinzoni_degenne(m=2)", A.LinGame.tirinzoni_degenne(m=2), gaussian))
    for base in (A.LazyTrackAndStop(), A.UniformGLR(), A.LinGame(), A.FWS(), A.TopTwo()):
        for at_stopping, at_sampling in ((True, False), (True, True)):
            out.append((f"Eliminate({type(base).__name__}, stop={at_stopping}, sample={at_sampling})",
                        A.Eliminate(base, at_stopping=at_stopping, at_sampling=at_sampling), gaussian))
    # every option of the algorithms that are compositions of rules (jaxbandits.rules.compose)
    for label, alg in (("TopTwo(leader=TS)", A.TopTwo(leader="TS")),
                       ("TopTwo(allocation=greedy)", A.TopTwo(allocation="greedy")),
                       ("TopTwo(allocation=arms, beta=0.3)", A.TopTwo(allocation="arms", beta=0.3)),
                       ("TopTwo(initial=spanning, answer=best)", A.TopTwo(initial="spanning", answer="best")),
                       ("TopTwo(epsilon=0.1, threshold=lts, reg=0.5)", A.TopTwo(epsilon=0.1, threshold="lts", reg=0.5)),
                       ("TopTwo(fa_candidates=2, design_iters=4)", A.TopTwo(fa_candidates=2, design_iters=4)),
                       ("UniformGLR(u=0.5, sigma=0.7)", A.UniformGLR(u=0.5, sigma=0.7)),
                       ("FWS(glr_form=ridge, threshold=log_t)", A.FWS(glr_form="ridge", threshold="log_t")),
                       ("FWS(forced=exact_squares, game=certified)", A.FWS(forced="exact_squares", game="certified")),
                       ("FWS(game=exact, threshold=lts)", A.FWS(game="exact", threshold="lts"))):
        out.append((label, alg, gaussian))
    for label, alg in (("Eliminate(TopTwo(leader=TS), statistical)", A.Eliminate(A.TopTwo(leader="TS"), rule="statistical")),
                       ("Eliminate(UniformGLR, statistical, sample)",
                        A.Eliminate(A.UniformGLR(), rule="statistical", at_sampling=True)),
                       ("Eliminate(TopTwo, sigma=0.8)", A.Eliminate(A.TopTwo(), sigma=0.8))):
        out.append((label, alg, gaussian))
    # K-armed Gaussian arms with per-arm variances, known or unknown (Jourdan, Degenne & Kaufmann 2023)
    hetero = make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 1.5, arm_noise=jnp.array([1.0, 0.5, 1.5, 0.7]))
    for label, alg in (("KArmedTrackAndStop(variances=known)", A.KArmedTrackAndStop(variances="known")),
                       ("KArmedTrackAndStop(variances=empirical)", A.KArmedTrackAndStop(variances="empirical")),
                       ("KArmedTrackAndStop(variances=empirical, statistic=glr)",
                        A.KArmedTrackAndStop(variances="empirical", statistic="glr")),
                       ("KArmedTopTwo(variances=empirical)", A.KArmedTopTwo(variances="empirical")),
                       ("KArmedTopTwo(leader=TS, variances=empirical)", A.KArmedTopTwo(leader="TS", variances="empirical"))):
        out.append((label, alg, hetero))
    # the calibrated thresholds of unknown variances: larger gaps, so that the runs stop before the cap
    wide = make_instance(jnp.eye(3), jnp.array([1.0, 0.0, -0.5]), 0.6, arm_noise=jnp.array([0.5, 0.4, 0.6]))
    for label, alg in (("KArmedTrackAndStop(variances=empirical, threshold=calibrated)",
                        A.KArmedTrackAndStop(variances="empirical", threshold="calibrated")),
                       ("KArmedTrackAndStop(variances=empirical, statistic=glr, threshold=calibrated)",
                        A.KArmedTrackAndStop(variances="empirical", statistic="glr", threshold="calibrated")),
                       ("KArmedTopTwo(variances=empirical, threshold=calibrated)",
                        A.KArmedTopTwo(variances="empirical", threshold="calibrated"))):
        out.append((label, alg, wide))
    # Kaufmann & Koolen's threshold of Gaussian arms (Chernoff's GLR)
    k_gauss = make_instance(jnp.eye(4), jnp.array([0.8, 0.3, 0.5, 0.2]), 0.5)
    for label, alg in (("KArmedTrackAndStop(threshold=kaufmann_koolen)",
                        A.KArmedTrackAndStop(threshold="kaufmann_koolen")),
                       ("KArmedTopTwo(threshold=kaufmann_koolen)", A.KArmedTopTwo(threshold="kaufmann_koolen"))):
        out.append((label, alg, k_gauss))
    # K-armed Top Two: the TCI challenger and information-directed selection
    for label, alg in (("KArmedTopTwo(challenger=TCI)", A.KArmedTopTwo(challenger="TCI")),
                       ("KArmedTopTwo(selection=ids)", A.KArmedTopTwo(selection="ids")),
                       ("KArmedTopTwo(leader=TS, selection=ids)", A.KArmedTopTwo(leader="TS", selection="ids")),
                       ("KArmedTopTwo(challenger=TCI, selection=ids)",
                        A.KArmedTopTwo(challenger="TCI", selection="ids"))):
        out.append((label, alg, karmed))
    for released in (False, True):
        for alg in fig1a_algorithms(2, released_code=released):
            out.append((f"fig1a[{'released' if released else 'paper'}] {alg.name}", alg, gaussian))
    return out


def digest(res) -> list[str]:
    """One short hash per replication of (samples, answer, pulls)."""
    samples = np.asarray(res.samples).reshape(-1)
    answer = np.asarray(res.answer).reshape(samples.size, -1)
    pulls = np.asarray(res.pulls).reshape(samples.size, -1)
    return [hashlib.sha256(np.int64(samples[i]).tobytes() + answer[i].astype(np.uint8).tobytes()
                           + pulls[i].astype(np.int64).tobytes()).hexdigest()[:16] for i in range(samples.size)]


def compute(only: str | None = None, lanes: int | None = None,
            block_steps: int | None = None) -> dict[str, list[str]]:
    from jaxbandits import precision
    from jaxbandits.engine import simulate

    precision.enable_globally()
    out = {}
    for label, alg, inst in configurations():
        if only and only not in label:
            continue
        res = simulate(alg, inst, 7, n_reps=N_REPS, max_steps=MAX_STEPS, record_pulls=True, lanes=lanes,
                       block_steps=block_steps)
        out[label] = digest(res)
        print(f"{label}: {out[label][0]} ...", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="store the hashes as the fixture")
    p.add_argument("--only", help="only the configurations whose label contains this text")
    p.add_argument("--lanes", type=int, default=None, help="another layout: this many lanes (results never "
                   "depend on the layout, so the fixture must hold at any)")
    p.add_argument("--block-steps", type=int, default=None, help="another layout: steps per block")
    args = p.parse_args(argv)
    if args.write and (args.lanes or args.block_steps):
        p.error("--write stores the default layout's hashes: drop --lanes and --block-steps")
    got = compute(args.only, args.lanes, args.block_steps)
    if args.write:
        old = json.loads(FIXTURE.read_text()) if FIXTURE.exists() and args.only else {}
        FIXTURE.write_text(json.dumps({**old, **got}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(got)} configurations to {FIXTURE}")
        return 0
    want = json.loads(FIXTURE.read_text())
    moved = [k for k in got if want.get(k) != got[k]]
    missing = [k for k in want if k not in got and not args.only]
    for k in moved:
        n = sum(a != b for a, b in zip(want.get(k, []), got[k])) if k in want else len(got[k])
        print(f"MOVED {k}: {n} of {len(got[k])} replications differ" if k in want else f"NEW {k}")
    for k in missing:
        print(f"MISSING {k}")
    print(f"{len(got) - len(moved)} of {len(got)} configurations identical")
    return 1 if moved or missing else 0


if __name__ == "__main__":
    sys.exit(main())
