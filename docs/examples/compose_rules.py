"""A new sampling rule as one pure function, composed with the library's stopping rules; and a cross
of three sampling rules x two thresholds x with and without elimination, as one sweep
(docs/adding_an_algorithm.md, section 1).

    python docs/examples/compose_rules.py            # the cross on Soare et al.'s benchmark, d = 2
"""
import jax.numpy as jnp

import jaxbandits as jb
from jaxbandits.rules import Elimination, recommend, sampling, stopping


def most_uncertain(keys, belief, ctx):
    """Pull the arm whose mean is least known: argmax_k ||x_k||^2 in V_t^-1 (greedy G-optimal)."""
    X = ctx.instance.arms
    return jnp.argmax(jnp.sum((X @ belief.inverse()) * X, axis=-1))


# each arm once, then the rule above; seed 000's GLR stopping rule (eq. (8)-(9): delta-correct
# whatever the sampling rule)
most_uncertain_glr = jb.compose(sampling=sampling.Initial(sampling.Stateless(most_uncertain)),
                                stopping=stopping.GLR(), delta=0.05, name="most uncertain + GLR")


SAMPLING = {"round robin": sampling.RoundRobin(),
            "Top Two": sampling.Initial(sampling.TopTwo()),
            "most uncertain": sampling.Initial(sampling.Stateless(most_uncertain))}
THRESHOLDS = {"log((1 + log t)/delta)": "heuristic", "log((t + 1)/delta)": "log_t"}


def cross() -> dict:
    """Every sampling rule x every threshold x with and without elimination (at stopping and at
    sampling: Tirinzoni & Degenne 2022's "(E)" algorithms)."""
    return {f"{s} | {t} | {'elimination' if e else 'no elimination'}":
            jb.compose(sampling=rule, eliminate=Elimination(at_sampling=True) if e else None,
                       stopping=stopping.TransportGLR(threshold=th, recommend=recommend.EmpiricalBest()))
            for s, rule in SAMPLING.items() for t, th in THRESHOLDS.items() for e in (False, True)}


def run(n_reps: int = 200, delta: float = 0.05):
    """The cross on Soare et al.'s benchmark at d = 2 (omega = 0.3), one sweep; its summary."""
    soare = jb.Generator("Soare", lambda key, d: jb.seeds.soare_benchmark(d, omega=0.3, theta_scale=1.0), {"d": [2]})
    # paired: every configuration sees the same replication keys (paired comparisons)
    df = jb.sweep(cross(), soare, deltas=[delta], n_reps=n_reps, max_steps=10**6, paired=True)
    return jb.sweeps.summary(df, ["algorithm"])


if __name__ == "__main__":
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 12):
        print(run()[["algorithm", "runs", "mean", "se", "error_rate", "ratio"]].to_string(index=False))
