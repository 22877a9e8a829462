"""Elimination (Tirinzoni & Degenne 2022) around every modern base that implements the protocol:
FWS, Top Two and LinGame wrapped at sampling (their own ``step_masked``) run on the engine and stay
correct on the easy fan instance; wrapped at stopping (the wrapper's generic rule on their
statistics) they never stop later than themselves on the same keys.

The test suite keeps a representative of each code path (``tests/test_elimination_rules.py``:
LT&S and the uniform GLR wrapped at sampling, FWS's ridge estimate at stopping); this script runs
the full set.  It asserts, for each base, that the wrapped-at-sampling runs all stop and are all
correct, and that the wrapped-at-stopping runs are all correct and never later than the base's;
it exits non-zero if any fails.

Usage: ``python benchmarks/elimination_rules_modern.py [--reps 16]``.
"""
from __future__ import annotations

import argparse
import math


def main(argv=None):
    import jax
    import numpy as np

    import jaxbandits
    import jaxbandits.algorithms as A
    from jaxbandits.engine import simulate
    from jaxbandits.instances.base import make_instance

    jaxbandits.precision.enable_globally()  # the benchmark's own arrays in float64 too
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=16)
    a = p.parse_args(argv)
    n = a.reps
    # the suite's fan(3, scale=2): e_1 (best), e_2 and four unit arms at angles 2 x (0.15, 0.2, 0.25, -0.2)
    ang = np.array([0.0, math.pi / 2, 0.3, 0.4, 0.5, -0.4])
    inst = make_instance(np.stack([np.cos(ang), np.sin(ang)], -1), [3.0, 0.0], 3.0)
    key = jax.random.key(20261123)

    def run(alg):
        r = simulate(alg, inst, key, n, 400_000)
        return (np.asarray(r.samples).ravel(), np.asarray(r.correct).ravel().astype(bool),
                np.asarray(r.stopped).ravel().astype(bool))

    for name in ("FWS", "TopTwo", "LinGame"):
        base = getattr(A, name)(delta=0.1)
        ss, cs, sts = run(A.Eliminate(base, at_sampling=True))
        sb, cb, stb = run(base)
        se, ce, ste = run(A.Eliminate(base))
        print(f"{name}: at sampling {ss.mean():.0f} pulls ({cs.sum()}/{n} correct); base {sb.mean():.0f}; "
              f"at stopping {se.mean():.0f} ({ce.sum()}/{n} correct, earlier in {int(np.sum(se < sb))})")
        assert sts.all() and cs.all(), name
        assert stb.all() and ste.all() and ce.all(), name
        assert np.all(se <= sb), name


if __name__ == "__main__":
    main()
