"""An independent plain NumPy / scipy Track-and-Stop (D-tracking, Chernoff stopping rule), written
from Garivier & Kaufmann (COLT 2016), Sec 3 and 6, and the authors' released ``TrackAndStop``: each
arm once; then, while the empirical best arm is unique and Chernoff's statistic is at most
log((log t + 1) / delta), pull argmin N if min N <= max(sqrt(t) - K/2, 0), else
argmax w*(mu_hat) - N / t (w* by nested brentq, Lemma 3 / Theorem 5); with tied empirical best
arms pull one of them at random.  It shares no code with the library.

``python benchmarks/karmed_reference.py [n_reps] [seed] [mu,...] [delta]`` prints the mean stopping
time with its standard error and the error count; by default on the instance of
``tests/test_karmed.py``'s reference band (Bernoulli mu = [0.7, 0.5, 0.4], delta = 0.1), whose band
is this script's output.

Also here, vectorised over replications: :func:`lucb1` (Kalyanakrishnan et al. 2012) and
:func:`lil_ucb` (Jamieson et al. 2014), written from the papers, for the checks of
``tests/test_karmed.py``; :func:`unknown_variance_eb_tc` (EB-TC with the empirical variances
plugged in, Jourdan, Degenne & Kaufmann, ALT 2023) and :func:`heteroscedastic_weights` (w* of
Gaussian arms with per-arm variances, by brentq) for ``tests/test_karmed_unknown_variance.py``;
:func:`eb_top_two` (EB-TC / EB-TCI with a fixed coin or information-directed selection) for
``tests/test_karmed_top_two_variants.py``; :func:`eb_tc_epsilon` (EB-TCε, Jourdan, Degenne &
Kaufmann, NeurIPS 2023) for ``experiments/jourdan_ebtc_epsilon.py``.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
from scipy.optimize import brentq

MU = (0.7, 0.5, 0.4)
DELTA = 0.1


def d(x, y):
    e = 1e-15
    x, y = min(max(x, e), 1 - e), min(max(y, e), 1 - e)
    return x * math.log(x / y) + (1 - x) * math.log((1 - x) / (1 - y))


def optimal_weights(mu):
    mu = np.asarray(mu, float)
    order = np.argsort(-mu, kind="stable")
    m = mu[order]

    def g(a, x):
        mid = (m[0] + x * m[a]) / (1 + x)
        return d(m[0], mid) + x * d(m[a], mid)

    def x_of_y(a, y):
        hi = 1.0
        while g(a, hi) < y:
            hi *= 2
        return brentq(lambda x: g(a, x) - y, 0.0, hi, xtol=1e-12)

    def F(y):
        tot = 0.0
        for a in range(1, len(m)):
            x = x_of_y(a, y)
            mid = (m[0] + x * m[a]) / (1 + x)
            tot += d(m[0], mid) / d(m[a], mid)
        return tot - 1.0

    ymax = d(m[0], m[1])
    hi = 0.5 * ymax
    while F(hi) < 0:
        hi = 0.5 * (hi + ymax)
    y = brentq(F, 1e-14 * ymax, hi, xtol=1e-12)
    x = np.array([1.0] + [x_of_y(a, y) for a in range(1, len(m))])
    w = np.empty(len(m))
    w[order] = x / x.sum()
    return w


def run(rng, mu=MU, delta=DELTA):
    mu = np.asarray(mu)
    K = len(mu)
    N = np.ones(K)
    S = (rng.random(K) < mu).astype(float)
    t = K
    while True:
        Mu = S / N
        ind = np.flatnonzero(Mu == Mu.max())
        best = ind[rng.integers(len(ind))]
        if len(ind) > 1:
            arm = best
        else:
            mid = (S[best] + S) / (N[best] + N)
            score = min(N[best] * d(Mu[best], mid[a]) + N[a] * d(Mu[a], mid[a]) for a in range(K) if a != best)
            if score > math.log((math.log(t) + 1) / delta):
                return t, best
            if N.min() <= max(math.sqrt(t) - K / 2, 0):
                arm = int(np.argmin(N))
            else:
                arm = int(np.argmax(optimal_weights(Mu) - N / t))
        t += 1
        S[arm] += rng.random() < mu[arm]
        N[arm] += 1


# -- LUCB1 and lil'UCB, vectorised over replications ------------------------------------------------
def _draw(rng, mu, mask, gaussian, sigma):
    """One reward of arm ``mu`` (per replication) where ``mask``, else 0."""
    if gaussian:
        x = mu + sigma * rng.standard_normal(mu.shape)
    else:
        x = (rng.random(mu.shape) < mu).astype(float)
    return np.where(mask, x, 0.0)


def lucb1(rng, mu, delta, reps, *, gaussian=False, sigma=0.5, scale=1.0, max_rounds=10**6):
    """LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone, ICML 2012, Sec 3; m = 1, epsilon = 0),
    written from the paper: sample every arm once, t = 1; while U(l_t) >= L(h_t): sample h_t and
    l_t, t = t + 1; with h_t the empirical best arm, l_t the other arm of largest upper bound, and
    the bounds mu_hat -+ sigma sqrt(2 beta / u), beta = log(5 K t^4 / (4 delta)) (``scale`` times
    it: the mutations).  Returns (samples, recommended arm) per replication."""
    mu = np.asarray(mu, float)
    K = len(mu)
    N = np.ones((reps, K))
    S = _draw(rng, np.broadcast_to(mu, (reps, K)), True, gaussian, sigma)
    done = np.zeros(reps, bool)
    tau = np.zeros(reps)
    best = np.zeros(reps, int)
    rows = np.arange(reps)
    for t in range(1, max_rounds):
        m = S / N
        w = sigma * np.sqrt(2.0 * scale * math.log(5 * K * t**4 / (4 * delta)) / N)
        h = m.argmax(axis=1)
        up = m + w
        up[rows, h] = -np.inf
        low = m[rows, h] - w[rows, h]
        l_ = up.argmax(axis=1)
        stop = ~done & (low > up[rows, l_])
        tau[stop], best[stop] = N[stop].sum(axis=1), h[stop]
        done |= stop
        if done.all():
            return tau, best
        for arm in (h, l_):
            x = _draw(rng, mu[arm], ~done, gaussian, sigma)
            S[rows, arm] += x
            N[rows, arm] += ~done
    raise RuntimeError("LUCB1 did not stop")


def lil_ucb(rng, mu, delta, reps, *, eps=0.01, beta=1.0, lam=9.0, gaussian=False, sigma=0.5, scale=1.0,
            max_steps=10**7):
    """lil'UCB (Jamieson, Malloy, Nowak & Bubeck, COLT 2014, Algorithm 1), written from the paper:
    sample every arm once; while N_i < 1 + lam sum_{j != i} N_j for every i, sample
    argmax_i mu_hat_i + (1 + beta)(1 + sqrt(eps)) sqrt(2 sigma^2 (1 + eps) log(log((1 + eps) N_i) / delta) / N_i)
    (+inf where log((1 + eps) N_i) <= delta; ``scale`` multiplies the log-log term: the
    mutations); output argmax_i N_i.  ``delta`` is the bound's parameter.  Returns (samples,
    recommended arm) per replication."""
    mu = np.asarray(mu, float)
    K = len(mu)
    N = np.ones((reps, K))
    S = _draw(rng, np.broadcast_to(mu, (reps, K)), True, gaussian, sigma)
    done = np.zeros(reps, bool)
    tau = np.zeros(reps)
    best = np.zeros(reps, int)
    rows = np.arange(reps)
    for _ in range(max_steps):
        tot = N.sum(axis=1, keepdims=True)
        stop = ~done & (N >= 1.0 + lam * (tot - N)).any(axis=1)
        tau[stop], best[stop] = tot[stop, 0], N[stop].argmax(axis=1)
        done |= stop
        if done.all():
            return tau, best
        inner = np.log((1.0 + eps) * N)
        ok = inner > delta
        with np.errstate(divide="ignore", invalid="ignore"):
            w = (1 + beta) * (1 + math.sqrt(eps)) * np.sqrt(
                2 * sigma**2 * (1 + eps) * scale * np.log(np.where(ok, inner, 2 * delta) / delta) / N)
        arm = np.where(ok, S / N + w, np.inf).argmax(axis=1)
        S[rows, arm] += _draw(rng, mu[arm], ~done, gaussian, sigma)
        N[rows, arm] += ~done
    raise RuntimeError("lil'UCB did not stop")


def heteroscedastic_weights(mu, sigma):
    """(w*, T*) of Gaussian arms with known per-arm standard deviations ``sigma``, written from
    T*^-1 = max_w min_{a != 1} (mu_1 - mu_a)^2 / (2 (s_1^2 / w_1 + s_a^2 / w_a)): with x_a = w_a / w_1
    and every pair at the same value y w_1, x_a(y) = s_a^2 y / (c_a - s_1^2 y), c_a = (mu_1 -
    mu_a)^2 / 2; w_1 y is largest where sum_a (s_1^2 / s_a^2) x_a(y)^2 = 1, solved by brentq."""
    mu, s2 = np.asarray(mu, float), np.asarray(sigma, float) ** 2
    b = int(np.argmax(mu))
    o = np.arange(len(mu)) != b
    c = 0.5 * (mu[b] - mu[o]) ** 2
    ymax = float(np.min(c / s2[b]))

    def x(y):
        return s2[o] * y / (c - s2[b] * y)

    y = brentq(lambda y: np.sum(s2[b] / s2[o] * x(y) ** 2) - 1.0, 1e-15 * ymax, ymax * (1 - 1e-15), xtol=1e-300,
               rtol=1e-15, maxiter=500)
    xs = np.ones(len(mu))
    xs[o] = x(y)
    w = xs / xs.sum()
    return w, 1.0 / (w[b] * y)


def _uv_pair(mb, ma, nb, na, vb, va, grid=4001):
    """inf_{u in [ma, mb]} nb/2 log(1 + (mb - u)^2 / vb) + na/2 log(1 + (ma - u)^2 / va) on a fine
    grid refined by scipy's bounded scalar minimisation around the best grid point."""
    from scipy.optimize import minimize_scalar

    f = lambda u: 0.5 * nb * np.log1p((mb - u) ** 2 / vb) + 0.5 * na * np.log1p((ma - u) ** 2 / va)  # noqa: E731
    us = np.linspace(ma, mb, grid)
    i = int(np.argmin(f(us)))
    lo, hi = us[max(i - 1, 0)], us[min(i + 1, grid - 1)]
    r = minimize_scalar(f, bounds=(lo, hi), method="bounded", options=dict(xatol=1e-14))
    return min(float(f(us[i])), float(r.fun))


def uv_calibrated(n, delta, K, statistic):
    """(valid [..., K], factor r(n) [..., K]) of the calibrated thresholds of unknown variances
    (Jourdan, Degenne & Kaufmann, ALT 2023, as the C port of the authors' code writes them:
    jvc56/MAGPIE ``src/impl/bai_helper.c`` at c7f796c2, ``HT`` with s = 2), with scipy's Lambert W
    and zeta; ``statistic`` "plug-in" (EV-GLR: the pair threshold is (N_b r_b + N_a r_a) / 2) or
    "glr" ((N_b log(1 + r_b) + N_a log(1 + r_a)) / 2)."""
    from scipy.special import lambertw, zeta

    s, eta = 2, 1.0 / math.log(1.0 / delta)
    logc = math.log(4 * (K - 1) * zeta(s) / delta)
    n = np.asarray(n, float)
    u = 2 * (1 + eta) * (logc + s * np.log(1 + np.log(n) / math.log(1 + eta)))
    valid = n > np.exp(1 + lambertw((u - 1) / math.e, 0).real)
    bar = lambda x, k: -lambertw(-np.exp(-x), k).real  # noqa: E731
    val_s2 = 1 + u / n
    val_mu = 1 + 2 * logc + 2 * s * np.log(1 + np.log(n) / (2 * s)) + 2 * s
    with np.errstate(invalid="ignore", divide="ignore"):
        r = bar(val_mu, -1) / (n * bar(val_s2, 0) - 1)
    per_arm = 0.5 * n * (r if statistic == "plug-in" else np.log1p(np.where(valid, r, 0.0)))
    return valid, per_arm


def unknown_variance_eb_tc(rng, mu, sigma, delta, reps, *, statistic="plug-in", scale=1.0, beta=0.5,
                           max_steps=10**6, threshold="heuristic"):
    """EB-TC with the empirical variances plugged in and the EV-GLR stopping rule (Jourdan, Degenne
    & Kaufmann, ALT 2023), written from the paper's description and the C port of its code: each
    arm twice (in order); then, while Z(t) <= scale * log((1 + log t) / delta): the leader B = the
    empirical best arm (first maximum), the challenger C = argmin_{a != B} W(B, a) with W(B, a) =
    1{mu_B > mu_a} (mu_B - mu_a)^2 / (2 (v_B / N_B + v_a / N_a)), v the empirical variances
    S2 / N - mu^2 (floored at 1e-10); pull B with probability ``beta``, else C.  Z(t) = min_{a != b}
    W(b, a) at the empirical best arm b (``statistic="plug-in"``) or the unknown-variance GLR
    (``"glr"``, :func:`_uv_pair`).  ``threshold="calibrated"``: stop instead when every arm's count
    is valid and every pair's W(b, a) (or GLR) exceeds scale * c(N_b, N_a) (:func:`uv_calibrated`).
    Vectorised over replications; returns (samples, recommended arm)."""
    mu, sd = np.asarray(mu, float), np.asarray(sigma, float)
    K = len(mu)
    rows = np.arange(reps)
    N = np.full((reps, K), 2.0)
    X = mu + sd * rng.standard_normal((2, reps, K))
    S, S2 = X.sum(0), (X * X).sum(0)
    done = np.zeros(reps, bool)
    tau = np.zeros(reps)
    best = np.zeros(reps, int)

    def costs(m, v, b):
        mb, vb, nb = m[rows, b][:, None], v[rows, b][:, None], N[rows, b][:, None]
        w = np.where(mb > m, 0.5 * (mb - m) ** 2 / (vb / nb + v / N), 0.0)
        w[rows, b] = np.inf
        return w

    for t in range(2 * K, max_steps):
        m = S / N
        v = np.maximum(S2 / N - m * m, 1e-10)
        b = m.argmax(axis=1)
        w = costs(m, v, b)
        if statistic == "glr":
            z = np.full(reps, np.inf)
            for r in np.flatnonzero(~done):
                for a in range(K):
                    if a != b[r]:
                        cost = 0.0 if m[r, a] >= m[r, b[r]] else _uv_pair(m[r, b[r]], m[r, a], N[r, b[r]], N[r, a],
                                                                          v[r, b[r]], v[r, a])
                        z[r] = min(z[r], cost)
        else:
            z = w.min(axis=1)
        if threshold == "calibrated":
            valid, per_arm = uv_calibrated(N, delta, K, statistic)
            c = per_arm[rows, b][:, None] + per_arm
            if statistic == "glr":
                raise NotImplementedError("the calibrated reference is written for the EV-GLR (plug-in)")
            over = np.where(np.arange(K) == b[:, None], True, w > scale * c)
            stop = ~done & valid.all(axis=1) & over.all(axis=1)
        else:
            stop = ~done & (z > scale * math.log((1 + math.log(t)) / delta))
        tau[stop], best[stop] = t, b[stop]
        done |= stop
        if done.all():
            return tau, best
        chal = w.argmin(axis=1)
        arm = np.where(rng.random(reps) < beta, b, chal)
        x = mu[arm] + sd[arm] * rng.standard_normal(reps)
        live = ~done
        S[rows[live], arm[live]] += x[live]
        S2[rows[live], arm[live]] += x[live] ** 2
        N[rows[live], arm[live]] += 1
    raise RuntimeError("EB-TC did not stop")


def uniform_calibrated_ev_glr(rng, mu, sigma, delta, reps, *, scale=1.0, max_steps=10**6):
    """Round-robin sampling (arm t mod K at pull t) of Gaussian arms N(mu_a, sigma_a^2) with the
    EV-GLR stopping rule at the calibrated thresholds of unknown variances (:func:`uv_calibrated`):
    stop at the first t >= 2 K where every arm's count is valid and every a != b has W(b, a) =
    (mu_b - mu_a)^2 / (2 (v_b / N_b + v_a / N_a)) > scale * c(N_b, N_a), b the empirical best arm,
    v = S2 / N - mu^2 floored at 1e-10.  Vectorised over replications; returns (samples,
    recommended arm)."""
    mu, sd = np.asarray(mu, float), np.asarray(sigma, float)
    K = len(mu)
    rows = np.arange(reps)
    N = np.zeros((reps, K))
    S, S2 = np.zeros((reps, K)), np.zeros((reps, K))
    done = np.zeros(reps, bool)
    tau = np.zeros(reps)
    best = np.zeros(reps, int)
    for t in range(max_steps):
        if t >= 2 * K:
            m = S / N
            v = np.maximum(S2 / N - m * m, 1e-10)
            b = m.argmax(axis=1)
            mb, vb, nb = m[rows, b][:, None], v[rows, b][:, None], N[rows, b][:, None]
            w = np.where(mb > m, 0.5 * (mb - m) ** 2 / (vb / nb + v / N), 0.0)
            valid, per_arm = uv_calibrated(N, delta, K, "plug-in")
            c = per_arm[rows, b][:, None] + per_arm
            over = np.where(np.arange(K) == b[:, None], True, w > scale * c)
            stop = ~done & valid.all(axis=1) & over.all(axis=1)
            tau[stop], best[stop] = t, b[stop]
            done |= stop
            if done.all():
                return tau, best
        a = t % K
        x = mu[a] + sd[a] * rng.standard_normal(reps)
        S[:, a] += x
        S2[:, a] += x * x
        N[:, a] += 1
    raise RuntimeError("round robin did not stop")


def calibration_gaussian(x):
    """C_G(x) = min_{lambda in (1/2, 1]} (g_G(lambda) + x) / lambda, g_G(lambda) = 2 lambda -
    2 lambda log(4 lambda) + log zeta(2 lambda) - log(1 - lambda) / 2 (Kaufmann & Koolen 2021,
    Corollary 10 / Definition 3): a 200,001-point grid refined by scipy's bounded minimisation."""
    from scipy.optimize import minimize_scalar
    from scipy.special import zeta

    g = lambda lam: 2 * lam - 2 * lam * np.log(4 * lam) + np.log(zeta(2 * lam, 1)) - 0.5 * np.log1p(-lam)  # noqa: E731
    grid = np.linspace(0.5 + 1e-9, 1 - 1e-12, 200_001)
    vals = (g(grid) + x) / grid
    i = int(np.argmin(vals))
    r = minimize_scalar(lambda lam: (g(lam) + x) / lam, bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]),
                        method="bounded", options=dict(xatol=1e-14))
    return float(min(vals[i], r.fun))


def uniform_glr_kaufmann_koolen(rng, mu, sigma, delta, reps, *, scale=1.0, max_steps=10**6):
    """Round robin (arm t mod K at pull t) on Gaussian arms N(mu_a, sigma^2) with the GLR stopping
    rule min_{a != b} (mu_b - mu_a)^2 / (2 sigma^2 (1 / N_b + 1 / N_a)) > scale * c(t, delta),
    c(t, delta) = 2 C_G(log((K - 1) / delta) / 2) + 4 log(4 + log(t / 2)) (:func:`calibration_gaussian`),
    checked from t = K on.  Vectorised over replications; returns (samples, recommended arm)."""
    mu = np.asarray(mu, float)
    K = len(mu)
    rows = np.arange(reps)
    N, S = np.zeros((reps, K)), np.zeros((reps, K))
    done = np.zeros(reps, bool)
    tau, best = np.zeros(reps), np.zeros(reps, int)
    cg = 2 * calibration_gaussian(math.log((K - 1) / delta) / 2)
    for t in range(max_steps):
        if t >= K:
            m = S / N
            b = m.argmax(axis=1)
            mb, nb = m[rows, b][:, None], N[rows, b][:, None]
            z = np.where(mb > m, 0.5 * (mb - m) ** 2 / (sigma**2 * (1 / nb + 1 / N)), 0.0)
            z[rows, b] = np.inf
            stop = ~done & (z.min(axis=1) > scale * (cg + 4 * math.log(4 + math.log(t / 2))))
            tau[stop], best[stop] = t, b[stop]
            done |= stop
            if done.all():
                return tau, best
        a = t % K
        S[:, a] += mu[a] + sigma * rng.standard_normal(reps)
        N[:, a] += 1
    raise RuntimeError("round robin did not stop")


# -- Track-and-Stop (D and C), KL-LUCB, T3C and TTTS, vectorised over replications -----------------------
def _bisect(f, lo, hi, iters, increasing=True):
    """The root of the monotone ``f`` on [lo, hi] (arrays), by ``iters`` bisection steps."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = f(mid) < 0 if increasing else f(mid) > 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _illinois(f, lo, hi, iters):
    """The root of the increasing ``f`` on [lo, hi] (arrays, f(lo) < 0 < f(hi) where finite) by the
    Illinois variant of regula falsi, with a bisection step wherever the secant leaves the bracket."""
    flo, fhi = f(lo), f(hi)
    side = np.zeros(lo.shape, int)
    for _ in range(iters):
        with np.errstate(invalid="ignore", divide="ignore"):
            x = (lo * fhi - hi * flo) / (fhi - flo)
        x = np.where(np.isfinite(x) & (x > lo) & (x < hi), x, 0.5 * (lo + hi))
        fx = f(x)
        right = fx < 0                                         # the root is in (x, hi)
        fhi = np.where(right & (side == 1), fhi / 2, fhi)
        flo = np.where(~right & (side == -1), flo / 2, flo)
        lo, flo = np.where(right, x, lo), np.where(right, fx, flo)
        hi, fhi = np.where(right, hi, x), np.where(right, fhi, fx)
        side = np.where(right, 1, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = (lo * fhi - hi * flo) / (fhi - flo)
    return np.where(np.isfinite(x) & (x >= lo) & (x <= hi), x, 0.5 * (lo + hi))


def optimal_weights_bisection(m, family="bernoulli", sigma=1.0, iters=52):
    """w*(m) of every row of ``m`` [R, K] with a unique largest entry (Garivier & Kaufmann 2016,
    Lemma 3 and Theorem 5), vectorised over the rows: s_a(y) = 1 / (1 + x_a(y)) solves
    d(m_b, q) + (1 - s) / s d(m_a, q) = y, q = m_a + s (m_b - m_a) (bisection on log s), and y solves
    F(y) = sum_{a != b} d(m_b, q_a) / d(m_a, q_a) = 1 on (0, min_a d(m_b, m_a)) (Illinois, on
    log(F + 1) against the logit of y / min_a d(m_b, m_a)).  Rows with tied
    maxima get the uniform weights on the tied arms (what C-tracking tracks there)."""
    R, K = m.shape
    rows = np.arange(R)
    b = m.argmax(axis=1)
    mb = m[rows, b][:, None]
    tie = (m == mb).sum(axis=1) > 1
    other = np.ones((R, K), bool)
    other[rows, b] = False
    ma = np.where(other, m, mb - 0.5)                 # a placeholder where a = b
    ma = np.where(tie[:, None], mb - 0.5, ma) if family == "gaussian" else np.where(tie[:, None], np.clip(mb - 0.5, 0, 1), ma)

    def q_of(s):
        return ma + s * (mb - ma)

    def inner(y):  # bisection on log s (x_a(y) may be large: s small)
        def g(log_s):
            s = np.exp(log_s)
            q = q_of(s)
            return _kl(family, mb, q, sigma) + (1 - s) / s * _kl(family, ma, q, sigma) - y
        return np.exp(_bisect(g, np.full((R, K), -690.0), np.zeros((R, K)), iters, increasing=False))

    def F(y):
        s = inner(y[:, None])
        q = q_of(s)
        ratio = _kl(family, mb, q, sigma) / np.maximum(_kl(family, ma, q, sigma), 1e-300)
        return np.where(other, ratio, 0.0).sum(axis=1) - 1.0

    ymax = np.where(other, _kl(family, mb, ma, sigma), np.inf).min(axis=1)

    def G(u):  # log(F(y) + 1) at y = ymax / (1 + e^-u): increasing from -inf to +inf
        with np.errstate(divide="ignore"):
            return np.log(np.maximum(F(ymax / (1.0 + np.exp(-u))) + 1.0, 0.0))

    y = ymax / (1.0 + np.exp(-_illinois(G, np.full(R, -40.0), np.full(R, 40.0), 24)))
    s = inner(y[:, None])
    x = np.where(other, (1 - s) / s, 1.0)
    w = x / x.sum(axis=1, keepdims=True)
    tied = m == mb
    return np.where(tie[:, None], tied / tied.sum(axis=1, keepdims=True), w)


def _glr_stop(family, m, N, t, delta, sigma):
    """(stop, b): Chernoff's statistic of the first empirical best arm b above log((1 + log t) / delta)."""
    rows = np.arange(m.shape[0])
    b = m.argmax(axis=1)
    mb, nb = m[rows, b][:, None], N[rows, b][:, None]
    mid = (nb * mb + N * m) / (nb + N)
    Z = nb * _kl(family, mb, mid, sigma) + N * _kl(family, m, mid, sigma)
    Z[rows, b] = np.inf
    return Z.min(axis=1) > math.log((1.0 + math.log(t)) / delta), b          # Z in KL units


def track_and_stop(rng, mu, delta, reps, *, tracking="D", gaussian=False, sigma=1.0, max_steps=10**7):
    """Track-and-Stop (Garivier & Kaufmann 2016, Sec 3 and 6) with D- or C-tracking and Chernoff's
    stopping rule at log((1 + log t) / delta), vectorised over replications: each arm once; then
    "D": with tied empirical best arms pull one of them at random, else argmin N if
    min N <= max(sqrt(t) - K/2, 0), else argmax w*(mu_hat) - N / t; "C": pull
    argmax sum_s w^{eps_s}(s) - N (the sum started at the initial counts), w^eps the L-infinity
    projection of w* on {w_a >= eps} (v_a = max(w_a - h, eps), h by bisection), eps_s =
    (K^2 + s)^-1/2 / 2.  w* by :func:`optimal_weights_bisection`.  Returns (samples, recommended arm)."""
    mu, K, family, (rows, N, S, done, tau, best) = _start(rng, mu, reps, gaussian, sigma)
    cum = N.copy()
    for t in range(K, max_steps):
        live = ~done
        m = S / N
        stop, b = _glr_stop(family, m, N, t, delta, sigma)
        stop &= live
        tau[stop], best[stop] = t, b[stop]
        done |= stop
        if done.all():
            return tau, best
        live = ~done
        if tracking == "D":
            mm = m[live]
            top = mm.max(axis=1, keepdims=True)
            tied = mm == top
            tie = tied.sum(axis=1) > 1
            random_top = np.argmax(np.where(tied, rng.random(mm.shape), -1.0), axis=1)
            n = N[live]
            starved = n.min(axis=1) <= max(math.sqrt(t) - K / 2.0, 0.0)
            arm = np.where(tie, random_top, n.argmin(axis=1))
            track = ~tie & ~starved                           # w* is needed there only
            if track.any():
                w = optimal_weights_bisection(mm[track], family, sigma)
                arm[track] = (w - n[track] / t).argmax(axis=1)
        else:
            w = optimal_weights_bisection(m[live], family, sigma)
            eps = 0.5 / math.sqrt(K * K + t)
            h = _bisect(lambda h: np.maximum(w - h[:, None], eps).sum(axis=1) - 1.0,
                        np.zeros(len(w)), np.ones(len(w)), 64, increasing=False)
            v = np.maximum(w - h[:, None], eps)
            cum[live] += v / v.sum(axis=1, keepdims=True)
            arm = (cum[live] - N[live]).argmax(axis=1)
        idx = rows[live]
        S[idx, arm] += _draw(rng, mu[arm], True, gaussian, sigma)
        N[idx, arm] += 1
    raise RuntimeError("Track-and-Stop did not stop")


def _kl_bounds(m, N, level, iters=60):
    """(L, U): min / max {q : N d(m, q) <= level} of Bernoulli arms, by bisection."""
    target = level / N
    up = _bisect(lambda q: _kl("bernoulli", m, q, 1.0) - target, m.copy(), np.ones_like(m), iters, increasing=True)
    low = _bisect(lambda q: _kl("bernoulli", m, q, 1.0) - target, np.zeros_like(m), m.copy(), iters, increasing=False)
    return low, up


def kl_lucb(rng, mu, delta, reps, *, max_steps=10**7):
    """KL-LUCB (Kaufmann & Kalyanakrishnan, COLT 2013) on Bernoulli arms with the KL bounds at
    level log((1 + log t) / delta) (Garivier & Kaufmann 2016's experiments), vectorised over
    replications: each arm once; then at every t = K, K + 2, ...: b the first empirical best arm,
    c = argmax_{a != b} U_a (first), stop when L_b > U_c (recommend b), else pull b and c.
    Returns (samples, recommended arm)."""
    mu = np.asarray(mu, float)
    K = len(mu)
    rows, N, S, done, tau, best = _each_arm_once(rng, mu, reps, False, 1.0)
    for t in range(K, max_steps, 2):
        m = S / N
        low, up = _kl_bounds(m, N, math.log((1.0 + math.log(t)) / delta))
        b = m.argmax(axis=1)
        up[rows, b] = -np.inf
        c = up.argmax(axis=1)
        stop = ~done & (low[rows, b] > up[rows, c])
        tau[stop], best[stop] = t, b[stop]
        done |= stop
        if done.all():
            return tau, best
        for arm in (b, c):
            S[rows, arm] += _draw(rng, mu[arm], ~done, False, 1.0)
            N[rows, arm] += ~done
    raise RuntimeError("KL-LUCB did not stop")


def _posterior(rng, S, N, gaussian, sigma):
    """Posterior draws of the arms' means of every row: Beta(1 + S, 1 + N - S) (uniform prior), or
    N(S / N, sigma^2 / N) (flat prior)."""
    if gaussian:
        return S / N + sigma * rng.standard_normal(S.shape) / np.sqrt(N)
    return rng.beta(1.0 + S, 1.0 + N - S)


def thompson_top_two(rng, mu, delta, reps, *, challenger="TC", beta=0.5, gaussian=False, sigma=1.0,
                     max_steps=10**7, block=64):
    """T3C (Shang et al., AISTATS 2020; ``challenger="TC"``) and TTTS (Russo, COLT 2016;
    ``challenger="TS"``) with Chernoff's stopping rule at log((1 + log t) / delta), vectorised over
    replications: each arm once; then the leader I = argmax of a posterior draw; with probability
    ``beta`` pull I, else the challenger: "TC", argmin_{a != I} 1{mu_I > mu_a} [N_I d(mu_I, m) +
    N_a d(mu_a, m)] (first); "TS", Russo's re-sampling: fresh posterior draws until one's best arm
    is not I (drawn ``block`` at a time, doubling), the arm it ends on.  Returns (samples,
    recommended arm)."""
    mu, K, family, (rows, N, S, done, tau, best) = _start(rng, mu, reps, gaussian, sigma)
    for t in range(K, max_steps):
        m = S / N
        stop, b = _glr_stop(family, m, N, t, delta, sigma)
        stop &= ~done
        tau[stop], best[stop] = t, b[stop]
        done |= stop
        if done.all():
            return tau, best
        idx = rows[~done]
        s, n, mm = S[idx], N[idx], m[idx]
        r = np.arange(len(idx))
        lead = _posterior(rng, s, n, gaussian, sigma).argmax(axis=1)
        pull_leader = rng.random(len(idx)) < beta
        if challenger == "TC":
            mI, nI = mm[r, lead][:, None], n[r, lead][:, None]
            mid = (nI * mI + n * mm) / (nI + n)
            cost = np.where(mm < mI, nI * _kl(family, mI, mid, sigma) + n * _kl(family, mm, mid, sigma), 0.0)
            cost[r, lead] = np.inf
            chal = cost.argmin(axis=1)
        else:
            chal = lead.copy()
            need = ~pull_leader
            size = block
            while need.any():
                j = np.flatnonzero(need)
                draws = _posterior(rng, np.repeat(s[j, None], size, 1), np.repeat(n[j, None], size, 1),
                                   gaussian, sigma).argmax(axis=2)                       # [J, size]
                differ = draws != lead[j, None]
                hit = differ.any(axis=1)
                first = differ.argmax(axis=1)
                chal[j[hit]] = draws[hit, first[hit]]
                need[j[hit]] = False
                size = min(2 * size, 1 << 16)
        arm = np.where(pull_leader, lead, chal)
        S[idx, arm] += _draw(rng, mu[arm], True, gaussian, sigma)
        N[idx, arm] += 1
    raise RuntimeError("Thompson Top Two did not stop")


# -- Successive Elimination, Successive Rejects and Sequential Halving, vectorised over replications ---
def successive_elimination(rng, mu, delta, reps, *, c=4.0):
    """Even-Dar, Mannor & Mansour 2006, Algorithm 3 on Bernoulli arms: every round pulls each
    remaining arm once; after round t every arm with max_b mu_hat_b - mu_hat_a >= 2 alpha_t,
    alpha_t = sqrt(log(c K t^2 / delta) / t), is eliminated; it stops with one arm left.
    Returns (samples, recommended arm)."""
    K = len(mu)
    alive = np.ones((reps, K), bool)
    S = np.zeros((reps, K))
    N = np.zeros((reps, K))
    t = 0
    while (alive.sum(axis=1) > 1).any():
        t += 1
        going = alive.sum(axis=1) > 1
        pull = alive & going[:, None]
        S += rng.binomial(1, np.broadcast_to(mu, (reps, K))) * pull
        N += pull
        m = S / np.maximum(N, 1)
        alpha = math.sqrt(math.log(c * K * t * t / delta) / t)
        top = np.where(alive, m, -np.inf).max(axis=1, keepdims=True)
        alive &= ~(going[:, None] & (top - m >= 2 * alpha))
    m = np.where(alive, S / np.maximum(N, 1), -np.inf)
    return N.sum(axis=1), m.argmax(axis=1)


def successive_rejects(rng, mu, n, reps):
    """Successive Rejects (Audibert & Bubeck 2010, Sec 3) on Bernoulli arms: phase k = 1 .. K - 1
    pulls every remaining arm n_k - n_{k-1} times, n_k = ceil((n - K) / (log-bar(K) (K + 1 - k))),
    log-bar(K) = 1/2 + sum_{i=2}^K 1/i, and rejects an arm of lowest empirical mean (at random among
    ties).  Returns (recommended arm, pulls [reps, K])."""
    K = len(mu)
    lbar = 0.5 + sum(1.0 / i for i in range(2, K + 1))
    nk = [0] + [math.ceil((n - K) / (lbar * (K + 1 - k))) for k in range(1, K)]
    alive = np.ones((reps, K), bool)
    S = np.zeros((reps, K))
    N = np.zeros((reps, K))
    for k in range(1, K):
        c = np.where(alive, nk[k] - nk[k - 1], 0)
        S += rng.binomial(c, mu)
        N += c
        m = np.where(alive, S / np.maximum(N, 1), np.inf)
        low = m == m.min(axis=1, keepdims=True)
        pick = np.argmax(low * rng.random((reps, K)), axis=1)
        alive[np.arange(reps), pick] = False
    return np.argmax(alive, axis=1), N


def sequential_halving(rng, mu, T, reps):
    """Sequential Halving (Karnin, Koren & Somekh 2013, Algorithm 1) on Bernoulli arms: R =
    ceil(log2 K) rounds; round r pulls every arm of S_r floor(T / (|S_r| R)) times and keeps the
    ceil(|S_r| / 2) of largest mean of that round's samples (at random among ties).  Returns
    (recommended arm, pulls [reps, K])."""
    K = len(mu)
    R = max(1, math.ceil(math.log2(K)))
    sizes = [K]
    for _ in range(R):
        sizes.append(math.ceil(sizes[-1] / 2))
    alive = np.ones((reps, K), bool)
    N = np.zeros((reps, K))
    for r in range(R):
        t = T // (sizes[r] * R)
        c = np.where(alive, t, 0)
        m = np.where(alive, rng.binomial(c, mu) / t, -np.inf)
        N += c
        key = m + 1e-9 * rng.random((reps, K))                      # means are multiples of 1/t
        order = np.argsort(-key, axis=1)
        keep = np.zeros_like(alive)
        np.put_along_axis(keep, order[:, :sizes[r + 1]], True, axis=1)
        alive &= keep
    return np.argmax(alive, axis=1), N


def _kl(family, x, y, sigma):
    if family == "gaussian":
        return (x - y) ** 2 / (2.0 * sigma**2)
    x, y = np.clip(x, 1e-15, 1 - 1e-15), np.clip(y, 1e-15, 1 - 1e-15)
    return x * np.log(x / y) + (1 - x) * np.log((1 - x) / (1 - y))


def _start(rng, mu, reps, gaussian, sigma):
    """(mu as floats, K, the family's name, :func:`_each_arm_once`'s state)."""
    mu = np.asarray(mu, float)
    return mu, len(mu), "gaussian" if gaussian else "bernoulli", _each_arm_once(rng, mu, reps, gaussian, sigma)


def _each_arm_once(rng, mu, reps, gaussian, sigma):
    """The state of ``reps`` replications after one pull of each arm: (row indices, counts N, sums
    S, stopped, stopping times, recommended arms)."""
    K = len(mu)
    N = np.ones((reps, K))
    S = _draw(rng, np.broadcast_to(mu, (reps, K)), True, gaussian, sigma)
    return np.arange(reps), N, S, np.zeros(reps, bool), np.zeros(reps), np.zeros(reps, int)


def eb_top_two(rng, mu, delta, reps, *, challenger="TC", selection="fixed", beta=0.5, gaussian=False, sigma=1.0,
               scale=1.0, max_steps=10**6):
    """EB-TC / EB-TCI with a fixed coin or information-directed selection, with Chernoff's stopping
    rule at log((1 + log t) / delta) (``scale`` times it: the mutations), vectorised over
    replications and written from the sources: each arm once; then, while
    min_{a != B} N_B d(mu_B, m) + N_a d(mu_a, m) <= beta(t, delta) (B the first empirical best arm,
    m the count-weighted mean of the pair): the challenger C = argmin_{a != B} Z_a (+ log N_a for
    "TCI", the C port of the authors' code, jvc56/MAGPIE ``bai_sampling_rule.c``), the first of the
    minima; pull B with probability ``beta`` ("fixed") or h = N_B d(mu_B, m) / (N_B d(mu_B, m) +
    N_C d(mu_C, m)) ("ids", You et al. 2023, zihaophys/topk_colt23 ``algorithm.jl``; a NaN h pulls C),
    else C.  Returns (samples, recommended arm) per replication."""
    mu, K, family, (rows, N, S, done, tau, best) = _start(rng, mu, reps, gaussian, sigma)
    for t in range(K, max_steps):
        m = S / N
        B = m.argmax(axis=1)
        mB, nB = m[rows, B][:, None], N[rows, B][:, None]
        mid = (nB * mB + N * m) / (nB + N)
        Z = nB * _kl(family, mB, mid, sigma) + N * _kl(family, m, mid, sigma)
        Z[rows, B] = np.inf
        stat = Z.min(axis=1)
        stop = ~done & (stat > scale * math.log((1.0 + math.log(t)) / delta))   # Z in KL units
        tau[stop], best[stop] = t, B[stop]
        done |= stop
        if done.all():
            return tau, best
        score = Z + np.log(N) if challenger == "TCI" else Z
        C = score.argmin(axis=1)
        if selection == "ids":
            mC, nC = m[rows, C], N[rows, C]
            bar = (nB[:, 0] * mB[:, 0] + nC * mC) / (nB[:, 0] + nC)
            num = nB[:, 0] * _kl(family, mB[:, 0], bar, sigma)
            with np.errstate(invalid="ignore", divide="ignore"):
                coin = num / (num + nC * _kl(family, mC, bar, sigma))
        else:
            coin = np.full(reps, beta)
        arm = np.where(rng.random(reps) < coin, B, C)
        x = _draw(rng, mu[arm], ~done, gaussian, sigma)
        S[rows, arm] += x
        N[rows, arm] += ~done
    raise RuntimeError("EB Top Two did not stop")


def eb_tc_epsilon(rng, mu, delta, reps, *, epsilon=0.1, epsilon0=0.1, selection="ids", beta=0.5, sigma=1.0,
                  max_steps=10**7):
    """EB-TCε (Jourdan, Degenne & Kaufmann, "An epsilon-Best-Arm Identification Algorithm for
    Fixed-Confidence and Beyond", NeurIPS 2023) on Gaussian arms of known ``sigma``, vectorised over
    replications and written from the paper's algorithm, sharing no code with the library: each arm
    once; then, while min_{a != B} (mu_B - mu_a + eps)^2 / (2 sigma^2 (1/N_B + 1/N_a)) <=
    log((1 + log t) / delta) (B the first empirical best arm; the epsilon-GLR), the challenger
    C = argmin_{a != B} (mu_B - mu_a + eps0) / sqrt(1/N_B + 1/N_a) (the first of the minima), and
    one tracking procedure per leader: with T(B) the rounds B led ("fixed") or the sum of
    beta_t = N_C / (N_B + N_C) over them ("ids"), pull B if the pulls of B in the rounds it led are
    <= beta T(B) ("fixed") or <= T(B) ("ids"), else C.  Returns (samples, recommended arm)."""
    mu = np.asarray(mu, float)
    K = len(mu)
    rows, N, S, done, tau, best = _each_arm_once(rng, mu, reps, True, sigma)
    T = np.zeros((reps, K))
    own = np.zeros((reps, K))
    for t in range(K, max_steps):
        m = S / N
        B = m.argmax(axis=1)
        mB, nB = m[rows, B][:, None], N[rows, B][:, None]
        x = mB - m + epsilon
        Z = np.sign(x) * x * x / (2.0 * sigma**2 * (1.0 / nB + 1.0 / N))
        Z[rows, B] = np.inf
        stop = ~done & (Z.min(axis=1) > math.log((1.0 + math.log(t)) / delta))
        tau[stop], best[stop] = t, B[stop]
        done |= stop
        if done.all():
            return tau, best
        ratio = (mB - m + epsilon0) / np.sqrt(1.0 / nB + 1.0 / N)
        ratio[rows, B] = np.inf
        C = ratio.argmin(axis=1)
        live = ~done
        if selection == "ids":
            nC = N[rows, C]
            T[rows, B] += np.where(live, nC / (nB[:, 0] + nC), 0.0)
            target = T[rows, B]
        else:
            T[rows, B] += live
            target = beta * T[rows, B]
        lead = own[rows, B] <= target
        own[rows, B] += lead & live
        arm = np.where(lead, B, C)
        r = _draw(rng, mu[arm], live, True, sigma)
        S[rows, arm] += r
        N[rows, arm] += live
    raise RuntimeError("EB-TCε did not stop")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    mu = tuple(float(v) for v in sys.argv[3].split(",")) if len(sys.argv) > 3 else MU
    delta = float(sys.argv[4]) if len(sys.argv) > 4 else DELTA
    rng = np.random.default_rng(seed)
    start = time.time()
    taus, errors = [], 0
    for _ in range(n):
        tau, best = run(rng, mu, delta)
        taus.append(tau)
        errors += best != int(np.argmax(mu))
        if len(taus) % 100 == 0:
            print(f"  {len(taus)} runs: mean {np.mean(taus):.1f}, errors {errors}", flush=True)
    taus = np.asarray(taus, float)
    print(f"mu = {mu}, delta = {delta}, {n} runs: mean {taus.mean():.3f} +- {taus.std(ddof=1) / math.sqrt(n):.3f} "
          f"(sd {taus.std(ddof=1):.2f}), errors {errors}, {time.time() - start:.0f} s")
