"""The persistent compilation cache: programs land on disk and a second process reads them back."""
import subprocess
import sys

SCRIPT = r"""
import sys, jax, jax.numpy as jnp
from jaxbandits import compilation_cache, engine
compilation_cache.enable(sys.argv[1], min_compile_seconds=0.0)
from jaxbandits.instances.base import make_instance
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
inst = make_instance(jnp.eye(2), jnp.array([1.0, 0.5]), 1.0)
r = engine.simulate(UniformGLR(delta=0.1), inst, jax.random.key(0), 4, 50)
print(r.compile_time)
"""


def test_programs_persist_across_processes(tmp_path):
    cache = tmp_path / "xla"
    run = lambda: subprocess.run([sys.executable, "-c", SCRIPT, str(cache)], capture_output=True, text=True,
                                 check=True)
    run()
    files = {p.name for p in cache.iterdir()}
    assert any("run" in f for f in files), files   # the engine's program is stored
    run()
    assert {p.name for p in cache.iterdir()} == files  # a second process adds nothing: it loaded them


def test_import_changes_no_cache_setting():
    out = subprocess.run([sys.executable, "-c", "import jax, jaxbandits, jaxbandits.compilation_cache; "
                          "print(jax.config.jax_compilation_cache_dir)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
