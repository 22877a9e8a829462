"""The GIFA checks the test suite runs on a representative subset, here for every case of
``tests/test_gifa.py``.

* ``--part delta-correct``: (epsilon, m, delta)-correctness of every assembly of ``ASSEMBLIES``
  (LUCB, UGapE, m-LinGapE, LinGIFA, LinGapE): 200 runs each on the seed 003 classic instance, every
  run stops with m arms and the error count passes the one-sided binomial test of H0 "error rate
  <= delta" at level 0.01 (the suite runs ``ASSEMBLIES_SUITE``).
* ``--part column-mode``: GIFA's column mode (V_t^-1 and the m columns B[:, J]) against the full
  K x K matrix, step for step, for every configuration of ``COLUMN_MODE_CASES``: the same arms,
  J(t), b_t, c_t as the full-matrix mode with the same keys, and agreement with a NumPy reference
  built from a direct solve (the suite runs ``COLUMN_MODE_SUITE``).

Each case asserts what the test asserts (it calls the test function).

Run from the repository root:  python benchmarks/gifa_checks.py [--part delta-correct|column-mode]
(both parts by default; about a minute each on a CPU)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from jaxbandits import precision  # noqa: E402

precision.enable_globally()  # float64, as the test suite runs (tests/conftest.py)

import test_gifa  # noqa: E402

PARTS = {
    "delta-correct": (test_gifa.ASSEMBLIES, test_gifa.test_assembly_is_delta_correct,
                      "delta-correct (binomial test, level 0.01)"),
    "column-mode": (test_gifa.COLUMN_MODE_CASES, test_gifa.test_column_mode_matches_full_matrix,
                    "column mode = full matrix = NumPy reference"),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=sorted(PARTS), action="append",
                    help="which check (repeatable; default: all)")
    args = ap.parse_args(argv)
    for part in args.part or list(PARTS):
        cases, check, says = PARTS[part]
        for name in cases:
            check(name)
            print(f"{part}: {name}: {says}")


if __name__ == "__main__":
    main()
