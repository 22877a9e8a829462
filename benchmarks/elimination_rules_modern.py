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
import os
import sys


def main(argv=None):
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from jaxbandits import precision

    precision.enable_globally()  # the test suite's precision (tests/conftest.py)
    import jaxbandits.algorithms as A
    import test_elimination_rules as te  # the suite's instance (fan(3, scale=2)), key and runner

    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=16)
    n = p.parse_args(argv).reps

    for name in ("FWS", "TopTwo", "LinGame"):
        base = getattr(A, name)(delta=0.1)
        ss, cs, sts, _ = te._run(A.Eliminate(base, at_sampling=True), n)
        sb, cb, stb, _ = te._run(base, n)
        se, ce, ste, _ = te._run(A.Eliminate(base), n)
        print(f"{name}: at sampling {ss.mean():.0f} pulls ({cs.sum()}/{n} correct); base {sb.mean():.0f}; "
              f"at stopping {se.mean():.0f} ({ce.sum()}/{n} correct, earlier in {int(np.sum(se < sb))})")
        assert sts.all() and cs.all(), name
        assert stb.all() and ste.all() and ce.all(), name
        assert np.all(se <= sb), name


if __name__ == "__main__":
    main()
