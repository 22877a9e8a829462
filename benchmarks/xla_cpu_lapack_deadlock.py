"""The XLA:CPU batched-LAPACK deadlock of jaxlib 0.10.x in plain JAX (no jaxbandits), in a few lines.

Each lane of a vmapped loop inverts two Gram matrices that do not depend on each other (as
LinGame's step does), by Cholesky and triangular solves.  jaxlib 0.10.0-0.10.2 split each batched
LAPACK call over XLA:CPU's thread pool and block the calling pool thread until the pieces finish;
when XLA runs the two inverses at once on a 2-core machine both pool threads wait and nothing is
left to run the pieces (:mod:`jaxbandits.watchdog` has the stacks).  Measured on this project's
2-core machines, one XLA:CPU device, d = 20, 300 iterations x 5 calls:

| jaxlib | lanes 32 | 64 | 128 | 256 | 1024 |
|---|---|---|---|---|---|
| 0.10.2 | ok | ok | ok | deadlock | deadlock |
| 0.9.2 | ok | - | - | ok (10 s) | ok (69 s) |

The program is run in a child process with a time limit; ``deadlock`` is a child that made no
progress before it.  Usage::

    python benchmarks/xla_cpu_lapack_deadlock.py [--lanes 256] [--d 20] [--timeout 90] [--python PY]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
L, d, iters = map(int, sys.argv[1:4])

def inverse(A):
    c = jnp.linalg.cholesky(A)
    return jax.scipy.linalg.cho_solve((c, True), jnp.eye(d))

def lane(key):
    def body(i, carry):
        A, B = carry
        u, v = jax.random.normal(jax.random.fold_in(key, i), (2, d))
        Ai, Bi = inverse(A + jnp.outer(u, u)), inverse(B + jnp.outer(v, v))  # independent: may run at once
        return jnp.eye(d) + 1e-3 * Ai, jnp.eye(d) + 1e-3 * Bi
    return jax.lax.fori_loop(0, iters, body, (jnp.eye(d), 2 * jnp.eye(d)))

f = jax.jit(jax.vmap(lane))
keys = jax.random.split(jax.random.key(0), L)
t = time.perf_counter()
for _ in range(5):
    jax.block_until_ready(f(keys))
print(f"jaxlib {jax.__version__}: {L} lanes, d = {d}: finished in {time.perf_counter() - t:.1f} s")
"""


def run(python: str, lanes: int, d: int, iters: int, timeout: float) -> tuple[bool, str]:
    """(finished, message) of one child process running the program above."""
    try:
        p = subprocess.run([python, "-c", CHILD, str(lanes), str(d), str(iters)], capture_output=True,
                           text=True, timeout=timeout, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    except subprocess.TimeoutExpired:
        return False, f"{lanes} lanes, d = {d}: no result in {timeout:.0f} s (deadlock)"
    if p.returncode:
        raise RuntimeError(p.stderr)
    return True, p.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=256)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    print(run(a.python, a.lanes, a.d, a.iters, a.timeout)[1])


if __name__ == "__main__":
    main()
