"""GIFA's column mode (V_t^-1 and the m columns B[:, J]) against the full K x K matrix, step for
step, for every configuration of ``tests/test_gifa.py::COLUMN_MODE_CASES`` (the test suite runs a
representative subset, ``COLUMN_MODE_SUITE``).  Each configuration asserts what the test asserts:
the same arms, J(t), b_t, c_t as the full-matrix mode with the same keys, and agreement with a
NumPy reference built from a direct solve.

Run from the repository root:  python benchmarks/gifa_column_mode.py   (about a minute on a CPU)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from jaxbandits import precision  # noqa: E402

precision.enable_globally()  # float64, as the test suite runs (tests/conftest.py)

import test_gifa  # noqa: E402


def main():
    for name in test_gifa.COLUMN_MODE_CASES:
        test_gifa.test_column_mode_matches_full_matrix(name)
        print(f"{name}: column mode = full matrix = NumPy reference")


if __name__ == "__main__":
    main()
