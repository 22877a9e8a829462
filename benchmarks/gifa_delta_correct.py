"""(epsilon, m, delta)-correctness of every GIFA assembly of ``tests/test_gifa.py::ASSEMBLIES``
(LUCB, UGapE, m-LinGapE, LinGIFA, LinGapE): 200 runs each on the seed 003 classic instance, every
run stops with m arms and the error count passes the one-sided binomial test of H0 "error rate <=
delta" at level 0.01.  The test suite runs a representative subset (``ASSEMBLIES_SUITE``).

Run from the repository root:  python benchmarks/gifa_delta_correct.py   (about a minute on a CPU)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from jaxbandits import precision  # noqa: E402

precision.enable_globally()  # float64, as the test suite runs (tests/conftest.py)

import test_gifa  # noqa: E402


def main():
    for name in test_gifa.ASSEMBLIES:
        test_gifa.test_assembly_is_delta_correct(name)
        print(f"{name}: delta-correct (binomial test, level 0.01)")


if __name__ == "__main__":
    main()
