"""Optimal-design solvers: G-optimal, XY / transductive, oracle (T*, psi*), rounding."""
