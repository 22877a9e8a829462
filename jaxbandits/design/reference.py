"""Plain NumPy / SciPy reference implementations of the design problems (for tests and benchmarks).

Deliberately simple, one instance at a time, no JAX: Fedorov-Wynn for G-optimal designs
(Fedorov 1972, exact step), the Frank-Wolfe of seed 001 App F (step 2/(k+2)) for minimax designs,
an SLSQP epigraph solve (independent of Frank-Wolfe) for small minimax problems, and the rounding
loop of seed 001 App B written as in its pseudo-code.
"""
from __future__ import annotations

import itertools

import numpy as np


def np_g_optimal(X, tol=1e-6, max_iters=100_000, away=True):
    """Fedorov-Wynn with exact line search (plus Wolfe away/drop steps when ``away``, Todd &
    Yildirim 2007); A^-1 recomputed from scratch every iteration; returns (lambda, value, iterations)."""
    X = np.asarray(X, float)
    K, d = X.shape
    lam = np.full(K, 1.0 / K)
    for k in range(max_iters):
        Ainv = np.linalg.inv(X.T @ (X * lam[:, None]))
        g = np.einsum("kd,de,ke->k", X, Ainv, X)
        j = int(np.argmax(g))
        if g[j] - d <= tol * d:
            break
        supp = np.where(lam > 0)[0]
        a = supp[int(np.argmin(g[supp]))]
        if away and d - g[a] > g[j] - d and lam[a] < 1:
            amin = -lam[a] / (1 - lam[a])
            alpha = amin if g[a] <= 1 else max((g[a] - d) / (d * (g[a] - 1.0)), amin)
            lam *= 1.0 - alpha
            lam[a] += alpha
            if alpha == amin:
                lam[a] = 0.0
            lam /= lam.sum()
            continue
        alpha = (g[j] - d) / (d * (g[j] - 1.0))
        lam *= 1.0 - alpha
        lam[j] += alpha
    Ainv = np.linalg.inv(X.T @ (X * lam[:, None]))
    return lam, float(np.max(np.einsum("kd,de,ke->k", X, Ainv, X))), k


def np_minimax_values(X, Y, lam):
    Ainv = np.linalg.pinv(X.T @ (X * lam[:, None]))
    return np.einsum("nd,de,ne->n", Y, Ainv, Y)


def np_minimax_fw(X, Y, iters=1000, rel_tol=None):
    """Frank-Wolfe with step 2/(k+2) on max_y ||y||^2_{A^-1} (seed 001 App F); (lambda, value, k)."""
    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    K = X.shape[0]
    lam = np.full(K, 1.0 / K)
    for k in range(1, iters + 1):
        Ainv = np.linalg.inv(X.T @ (X * lam[:, None]))
        g = np.einsum("nd,de,ne->n", Y, Ainv, Y)
        y = Y[int(np.argmax(g))]
        c = X @ (Ainv @ y)
        j = int(np.argmax(c * c))
        gam = 2.0 / (k + 2.0)
        new = (1 - gam) * lam
        new[j] += gam
        rel = np.linalg.norm(new - lam) / np.linalg.norm(lam)
        lam = new
        if rel_tol is not None and rel < rel_tol:
            break
    return lam, float(np.max(np_minimax_values(X, Y, lam))), k


def np_minimax_slsqp(X, Y, x0=None):
    """min_{lambda, t} t s.t. ||y||^2_{A(lambda)^-1} <= t, lambda in the simplex (SciPy SLSQP)."""
    from scipy.optimize import minimize

    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    K = X.shape[0]
    lam0 = np.full(K, 1.0 / K) if x0 is None else np.asarray(x0, float)
    t0 = float(np.max(np_minimax_values(X, Y, lam0)))

    def cons(v):
        return v[-1] - np_minimax_values(X, Y, v[:-1])

    res = minimize(lambda v: v[-1], np.r_[lam0, t0], method="SLSQP",
                   constraints=[{"type": "ineq", "fun": cons}, {"type": "eq", "fun": lambda v: np.sum(v[:-1]) - 1}],
                   bounds=[(1e-12, 1.0)] * K + [(0, None)], options=dict(maxiter=2000, ftol=1e-14))
    lam = np.clip(res.x[:-1], 0, None)
    lam /= lam.sum()
    return lam, float(np.max(np_minimax_values(X, Y, lam)))


def pair_differences(Z):
    Z = np.asarray(Z, float)
    return np.array([Z[i] - Z[j] for i, j in itertools.combinations(range(len(Z)), 2)])


def oracle_directions(Z, theta):
    Z = np.asarray(Z, float)
    v = Z @ theta
    s = int(np.argmax(v))
    return np.array([(Z[s] - Z[i]) / (v[s] - v[i]) for i in range(len(Z)) if i != s])


def np_round(design, n):
    """Seed 001 App B rounding, written as in the paper's pseudo-code."""
    design = np.asarray(design, float)
    idx = np.where(design > 0)[0]
    lam = design[idx] / design[idx].sum()
    p = len(idx)
    N = np.ceil((n - 0.5 * p) * lam)
    while N.sum() != n:
        if N.sum() < n:
            j = np.argmin(N / lam)
            N[j] += 1
        else:
            j = np.argmax((N - 1) / lam)
            N[j] -= 1
    out = np.zeros(len(design), int)
    out[idx] = N
    return out


def np_greedy(X, n):
    """Soare et al. (2014) greedy sequential G-allocation, one pull at a time, after a spanning
    start chosen by pivoted Gram-Schmidt (largest residual norm first)."""
    X = np.asarray(X, float)
    K, d = X.shape
    counts = np.zeros(K, int)
    R = X.copy()
    scale = np.max(np.sum(X * X, 1))
    for _ in range(min(d, n)):
        nr = np.sum(R * R, 1)
        j = int(np.argmax(nr))
        if nr[j] <= 1e-10 * scale:
            break
        q = R[j] / np.sqrt(nr[j])
        R = R - np.outer(R @ q, q)
        counts[j] += 1
    A = X.T @ (X * counts[:, None])
    rtol = 1e-9  # ties of the max-variance criterion, broken towards the most uncertain arm
    while counts.sum() < n:
        v = np.array([np.max(np.einsum("kd,de,ke->k", X, np.linalg.inv(A + np.outer(x, x)), X)) for x in X])
        g = np.einsum("kd,de,ke->k", X, np.linalg.pinv(A), X)
        cand = v <= v.min() + rtol * abs(v.min())
        gc = np.where(cand, g, -np.inf)
        bj = int(np.flatnonzero(gc >= gc.max() - rtol * abs(gc.max()))[0])
        counts[bj] += 1
        A += np.outer(X[bj], X[bj])
    return counts
