"""LT&S averaging against no averaging on the many-arms instance of Table 1 (seed 000), pinned.

On that instance the plug-in allocation is the same at every update once mu_hat ranks e_1 first,
so sum_s w(s) differs from t w(t) by a few early rounds only, and paired runs of the two variants
differ by a few pulls out of T (not the ~17% of the paper; module docstring of
``jaxbandits.algorithms.fixed_confidence.track_and_stop``).  This script asserts it: 16 paired
runs of T fixed rounds (no stopping) per variant, same keys; for each variant the median l_1
distance between sum_s w(s) and T w(T) is below 5% of T, and the median l_1 distance between the
two variants' pull counts is at most 5% of T.  It exits non-zero if either fails.

The test suite checks the mechanism on small instances (``tests/test_track_and_stop.py``: the
variants coincide when w(t) never moves, and differ, each tracking its own target, where it
moves); this is the claim about the paper's instance, kept out of the suite because each variant
on a 60-arm instance is a program of its own to compile.

Usage: ``python benchmarks/track_and_stop_averaging.py [--arms 60] [--rounds 500]``.
"""
from __future__ import annotations

import argparse


def main(argv=None):
    import jax
    import numpy as np

    import jaxbandits
    from jaxbandits.algorithms import LazyTrackAndStop
    from jaxbandits.instances import seeds

    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    p = argparse.ArgumentParser()
    p.add_argument("--arms", type=int, default=60)
    p.add_argument("--rounds", type=int, default=500)
    a = p.parse_args(argv)

    def run(alg, inst, keys):
        """jit(vmap(fori_loop(step))): T rounds of each replication (the suite's harness)."""
        def one(k):
            st = alg.init(jax.random.fold_in(k, 0), inst)
            return jax.lax.fori_loop(0, a.rounds, lambda t, s: alg.step(jax.random.fold_in(k, t + 1), s, inst), st)
        return jax.vmap(one)(keys)

    inst = seeds.many_arms_code(jax.random.PRNGKey(0), a.arms)
    keys = jax.random.split(jax.random.PRNGKey(1), 16)
    T = a.rounds
    N = {}
    for av in (True, False):
        alg = LazyTrackAndStop(delta=1e-300, averaging=av)
        st = jax.jit(lambda inst, keys, alg=alg: run(alg, inst, keys))(inst, keys)
        C = np.asarray(LazyTrackAndStop.cumulative_allocation(st))
        drift = float(np.median(np.abs(C - T * np.asarray(st.sampling.w)).sum(1)))
        print(f"averaging={av}: median |sum_s w(s) - T w(T)|_1 = {drift:.2f} (T = {T})")
        assert drift < 0.05 * T, drift
        N[av] = np.asarray(st.stats.counts)
    diff = float(np.median(np.abs(N[True] - N[False]).sum(1)))
    print(f"median |N_avg - N_no_avg|_1 = {diff:.1f} pulls out of {T}")
    assert diff <= 0.05 * T, diff


if __name__ == "__main__":
    main()
