"""An independent plain NumPy / scipy fixed-confidence Peace for transductive linear bandits, written
from Katz-Samuels, Jain, Karnin & Jamieson (NeurIPS 2020) and the authors' released transductive
run (github.com/jkatzsam/linear_bandits_empirical_process, ``transductive_bandits_alg.py``,
``lin_tb_alg``), one replication at a time.  It shares no code with the library.

Epoch k = 1, 2, ...: z0 = the empirical best survivor under the previous estimate (the first:
a standard normal theta), Y = {z0 - z : z surviving}; the rho design (Frank-Wolfe, step 2/(c+2)
for c = 1, 2, ..., stop on a 1 % relative change or after 1999 iterations, weights below 1e-5
zeroed); with ``mixed`` also the Gaussian-width design (Adam on softmax logits, lr 1e-2, 500
steps of one eta each, the gradient of y^T A^{-1/2} eta through the inverse and the matrix square
root by a Sylvester equation, as automatic differentiation through ``scipy.linalg.sqrtm`` gives
it; gamma = the squared mean width over 1000 draws), mixed half and half; t_k = 2 rho
log(f k^2 / delta) (+ gamma); B = t_1 unless a gap scale is given; N_k = max(ceil((1 + eps) t_k
(2^(k+2) / B)^2), ceil(p / eps)); Pukelsheim's efficient rounding; least squares on the epoch's
pulls (pseudo-inverse); survivors: the gap to the empirical best below B / 2^(k+1).

``python benchmarks/fc_peace_reference.py [n_reps] [seed] [d] [omega] [delta] [rho|mixed] [log_factor]``
prints the mean number of samples with its standard error and the error count on Soare et al.'s
instance (X = Z = e_1..e_d, (cos omega, sin omega, 0, ...), theta = 2 e_1, unit Gaussian noise).
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
import scipy.linalg


def soare(d, omega, scale=2.0):
    X = np.vstack([np.eye(d), np.r_[math.cos(omega), math.sin(omega), np.zeros(d - 2)]])
    theta = np.zeros(d)
    theta[0] = scale
    return X, theta


def rho_design(X, Y, max_iter=2000):
    """App F Frank-Wolfe over the explicit directions Y; (design, rho at the final design)."""
    K = X.shape[0]
    lam = np.full(K, 1.0 / K)
    for c in range(1, max_iter):
        Ainv = np.linalg.pinv(X.T @ (lam[:, None] * X))
        norms = np.einsum("ij,jk,ik->i", Y, Ainv, Y)
        y = Y[np.argmax(norms)]
        j = np.argmax((X @ (Ainv @ y)) ** 2)
        g = 2.0 / (c + 2.0)
        new = (1.0 - g) * lam
        new[j] += g
        rel = np.linalg.norm(new - lam) / np.linalg.norm(lam)
        lam = new
        if rel < 0.01:
            break
    cut = np.where(lam < 1e-5, 0.0, lam)
    cut /= cut.sum()
    Ainv = np.linalg.pinv(X.T @ (cut[:, None] * X))
    return cut, float(np.max(np.einsum("ij,jk,ik->i", Y, Ainv, Y)))


def _inv_sqrt(A):
    return np.real(scipy.linalg.sqrtm(np.linalg.inv(A)))


def gamma_design(X, Y, rng, iters=500, lr=1e-2, samples=1000):
    """Adam on softmax logits for E max_y y^T A^{-1/2} eta; (final design, squared mean width)."""
    K, d = X.shape
    w = np.zeros(K)
    m = np.zeros(K)
    v = np.zeros(K)
    for t in range(1, iters + 1):
        lam = np.exp(w - w.max())
        lam /= lam.sum()
        A = X.T @ (lam[:, None] * X)
        S = _inv_sqrt(A)
        eta = rng.standard_normal(d)
        y = Y[np.argmax(Y @ (S @ eta))]
        gS = np.outer(eta, y)                                  # d (eta^T S y) / dS
        gB = scipy.linalg.solve_sylvester(S, S, gS)            # S = sqrtm(B): S gB + gB S = gS
        Ainv = np.linalg.inv(A)
        gA = -Ainv.T @ gB @ Ainv.T                             # B = A^-1
        gl = np.einsum("ij,jk,ik->i", X, gA, X)
        g = lam * (gl - lam @ gl)                              # softmax
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    lam = np.exp(w - w.max())
    lam /= lam.sum()
    S = _inv_sqrt(X.T @ (lam[:, None] * X))
    etas = rng.standard_normal((samples, d))
    return lam, float(np.mean(np.max(Y @ (S @ etas.T), axis=0)) ** 2)


def rounding(lam, n):
    """Pukelsheim's efficient apportionment of n pulls."""
    supp = np.flatnonzero(lam > 0)
    p = lam[supp]
    m = np.ceil((n - 0.5 * len(supp)) * p)
    while m.sum() != n:
        if m.sum() < n:
            m[np.argmin(m / p)] += 1
        else:
            m[np.argmax((m - 1) / p)] -= 1
    out = np.zeros(len(lam))
    out[supp] = m
    return out


def run(X, Z, theta_star, delta, rng, mixed=True, log_factor=2.0, eps=0.5, gap_scale=None, max_epochs=60):
    """One replication: (index of the returned item, total samples)."""
    d = X.shape[1]
    alive = np.arange(Z.shape[0])
    theta = rng.standard_normal(d)
    B = gap_scale
    total = 0.0
    for k in range(1, max_epochs + 1):
        Zk = Z[alive]
        Y = Zk[np.argmax(Zk @ theta)] - Zk
        lam, rho = rho_design(X, Y)
        t = 2.0 * rho * math.log(log_factor * k**2 / delta)
        if mixed:
            lam_g, gam = gamma_design(X, Y, rng)
            lam, t = 0.5 * (lam + lam_g), t + gam
        if B is None:
            B = t
        n = max(math.ceil((1 + eps) * t * (2.0 ** (k + 2) / B) ** 2), math.ceil(np.sum(lam > 0) / eps))
        counts = rounding(lam, n)
        total += n
        sums = counts * (X @ theta_star) + np.sqrt(counts) * rng.standard_normal(len(counts))
        theta = np.linalg.pinv(X.T @ (counts[:, None] * X)) @ (X.T @ sums)
        vals = Zk @ theta
        alive = alive[vals.max() - vals < B / 2.0 ** (k + 1)]
        if len(alive) == 1:
            break
    return int(alive[np.argmax(Z[alive] @ theta)]), total


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 200
    seed = int(argv[2]) if len(argv) > 2 else 2026
    d = int(argv[3]) if len(argv) > 3 else 3
    omega = float(argv[4]) if len(argv) > 4 else 0.3
    delta = float(argv[5]) if len(argv) > 5 else 0.05
    mixed = (argv[6] if len(argv) > 6 else "rho") == "mixed"
    log_factor = float(argv[7]) if len(argv) > 7 else 2.0
    X, theta = soare(d, omega)
    rng = np.random.default_rng(seed)
    t0 = time.time()
    out = [run(X, X, theta, delta, rng, mixed=mixed, log_factor=log_factor) for _ in range(n)]
    samples = np.array([s for _, s in out])
    errors = sum(a != 0 for a, _ in out)
    print(f"d={d} omega={omega} delta={delta} {'mixed' if mixed else 'rho'} log_factor={log_factor}: "
          f"mean {samples.mean():.3f} +- {samples.std(ddof=1) / math.sqrt(n):.3f} (sd {samples.std(ddof=1):.2f}, "
          f"{n} runs, {errors} errors, {time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main(sys.argv)
