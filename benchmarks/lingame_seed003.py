"""Speed of LinGame (Degenne et al. 2020) on the seed 003 Fig. 1 instances: replications per second,
compilation excluded (the engine's ``Results.wall_time``), on one XLA device.

Instances (sigma = 1/2, delta = 5%): Fig. 1(a) classic K = 4, m = 2, omega = pi/6 (LinGame
Top-2), App. A Fig. 2 (omega = pi/3), Fig. 1(b) hard Top-1 K = 3, omega = 0.1 (LinGame and its
``released_code()`` configuration).  Each row also reports the mean stopping time and the
replication-steps per second.

Usage: ``python benchmarks/lingame_seed003.py [--reps 200]``.
"""
from __future__ import annotations

import argparse
import math


def main(argv=None):
    import jax
    import numpy as np

    import jaxbandits  # noqa: F401
    from jaxbandits.algorithms import LinGame
    from jaxbandits.engine import simulate
    from jaxbandits.instances.seeds import topm_classic, topm_hard_top1

    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=200)
    a = p.parse_args(argv)
    rows = [("Fig. 1(a) classic K=4 m=2 pi/6", topm_classic(4, 2), LinGame(m=2)),
            ("App. A Fig. 2 classic K=4 m=2 pi/3", topm_classic(4, 2, omega=math.pi / 3), LinGame(m=2)),
            ("Fig. 1(b) hard Top-1", topm_hard_top1(), LinGame()),
            ("Fig. 1(b) hard Top-1", topm_hard_top1(), LinGame().released_code())]
    print(f"device: {jax.devices()[0].device_kind}, {a.reps} replications per row")
    for title, inst, alg in rows:
        simulate(alg, inst, jax.random.key(0), a.reps, 2_000_000, record_pulls=False)  # compile
        res = simulate(alg, inst, jax.random.key(1), a.reps, 2_000_000, record_pulls=False)
        s = np.asarray(res.samples, float).ravel()
        print(f"{title:36s} {alg.name:28s} mean tau {s.mean():8.1f} +- {s.std(ddof=1) / math.sqrt(s.size):6.1f}  "
              f"{a.reps / res.wall_time:8.2f} reps/s  {s.sum() / res.wall_time:10.0f} steps/s  "
              f"(run {res.wall_time:.1f} s, compile {res.compile_time:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
