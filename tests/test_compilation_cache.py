"""The persistent compilation cache: programs land on disk and a second process reads them back;
programs are kept apart by the host CPU's features; the loader's spurious lines stay off the screen."""
import os
import subprocess
import sys

SCRIPT = r"""
import sys, jax, jax.numpy as jnp
from jaxbandits import compilation_cache, engine
if len(sys.argv) > 2:   # pretend to be a host whose CPU has other instruction-set features
    compilation_cache._cpu_features = lambda: sys.argv[2]
folder = compilation_cache.enable(sys.argv[1], min_compile_seconds=0.0)
from jaxbandits.instances.base import make_instance
from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
inst = make_instance(jnp.eye(2), jnp.array([1.0, 0.5]), 1.0)
r = engine.simulate(UniformGLR(delta=0.1), inst, jax.random.key(0), 4, 50)
print(folder.name, compilation_cache.counts()["hits"])
"""


def _run(cache, *features):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), *features], capture_output=True, text=True,
                         check=True, env={**os.environ, "JAXBANDITS_COMPILATION_CACHE": "on"})
    folder, hits = out.stdout.split()
    return folder, int(hits), out.stderr


def test_programs_persist_per_cpu_and_reruns_print_no_xla_lines(tmp_path):
    cache = tmp_path / "xla"
    here, cold_hits, _ = _run(cache)
    files = {p.name for p in (cache / here).iterdir()}
    engine = lambda names: [f for f in names if f.startswith("jit_run")]
    assert engine(files), files   # the engine's program is stored
    again, hits, err = _run(cache)
    assert again == here and hits > cold_hits
    assert {p.name for p in (cache / here).iterdir()} == files  # a second process adds nothing: it loaded them
    # a rerun that loads every program from disk prints no XLA log line (jaxlib 0.9 logs three
    # per program: the loader's tuning-feature complaint twice, the version note once)
    assert not [line for line in err.splitlines() if line[:1] in "IWEF" and line[1:5].isdigit()], err[:2000]
    # a CPU without this one's vector units never loads these programs: it compiles everything anew
    # (as the first process did, whose only hits are programs it compiled twice itself) into a
    # folder of its own, and this CPU's folder is untouched
    other, hits, _ = _run(cache, "fpu sse sse2")
    assert other != here and other.split("-")[0] == here.split("-")[0]   # same machine type, other features
    assert hits == cold_hits and len(engine(p.name for p in (cache / other).iterdir())) == len(engine(files))
    assert {p.name for p in (cache / here).iterdir()} == files


FILTER = r"""
import os, sys
from jaxbandits import compilation_cache
compilation_cache.filter_spurious_logs()
os.write(2, b"E1128 08:40:59.005554    5387 cpu_aot_loader.cc:220] Loading XLA:CPU AOT result. Target machine "
            b"feature +prefer-no-gather is not  supported on the host machine. ... SIGILL.\n")
os.write(2, b"W1128 08:40:59.004775    5192 pjrt_executable.cc:642] Assume version compatibility. PjRt-IFRT does "
            b"not track XLA executable versions.\n")
os.write(2, b"E1128 08:40:59.005576    5387 cpu_aot_loader.cc:220] Loading XLA:CPU AOT result. Target machine "
            b"feature +avx512f is not  supported on the host machine. ... SIGILL.\n")
os.write(2, b"progress 10%\r")
sys.stderr.write("a Python warning\n")
os.write(2, b"E1128 08:41:00.000001    5387 some_other.cc:1] a real error")   # no end of line
"""


def test_filter_drops_only_the_spurious_lines():
    err = subprocess.run([sys.executable, "-c", FILTER], capture_output=True, check=True).stderr.decode()
    assert "prefer-no-gather" not in err and "Assume version compatibility" not in err
    assert "+avx512f is not" in err          # a real instruction-set mismatch still shows
    assert "progress 10%\r" in err and "a Python warning\n" in err and "a real error" in err


def test_import_changes_no_cache_setting():
    out = subprocess.run([sys.executable, "-c", "import jax, jaxbandits, jaxbandits.compilation_cache; "
                          "print(jax.config.jax_compilation_cache_dir)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def test_python_stderr_stays_a_terminal():
    """Progress bars decide from ``sys.stderr.isatty()``: the filter keeps it a terminal."""
    import pty

    master, slave = pty.openpty()
    code = ("import sys; from jaxbandits import compilation_cache; compilation_cache.filter_spurious_logs(); "
            "print(sys.stderr.isatty())")
    try:
        out = subprocess.run([sys.executable, "-c", code], stderr=slave, stdout=subprocess.PIPE, text=True, check=True)
    finally:
        os.close(slave)
        os.close(master)
    assert out.stdout.strip() == "True"
