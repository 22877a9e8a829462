"""simulate over the processes of a jax.distributed run (jaxbandits.distributed):
2 local CPU processes with a local coordinator give every process the one-process result."""
import os
import socket
import subprocess
import sys
import textwrap

import jax
import numpy as np

from jaxbandits.engine import simulate

SCRIPT = textwrap.dedent("""
    import os, sys
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax, numpy as np
    pid, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2, process_id=pid)
    from test_engine import two_instances
    from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR
    from jaxbandits.engine import simulate
    assert jax.process_count() == 2 and len(jax.local_devices()) == 1
    r = simulate(UniformGLR(delta=0.1), two_instances(), jax.random.key(3), 30, 10**5)
    assert r.devices == 1 and r.ran.all()
    np.savez(out, samples=r.samples, pulls=r.pulls, answer=r.answer, steps=r.steps)
    jax.distributed.shutdown()
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_return_the_one_process_result(tmp_path):
    path = os.path.join(os.path.dirname(__file__), "_distributed_script.py")
    with open(path, "w") as f:
        f.write(SCRIPT)
    port = str(_free_port())
    outs = [tmp_path / f"p{i}.npz" for i in range(2)]
    env = dict(os.environ, XLA_FLAGS="", JAX_PLATFORMS="cpu")
    try:
        procs = [subprocess.Popen([sys.executable, path, str(i), port, str(outs[i])], env=env) for i in range(2)]
        codes = [p.wait(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        os.remove(path)
    assert codes == [0, 0]
    from test_engine import two_instances
    from jaxbandits.algorithms.fixed_confidence.uniform import UniformGLR

    one = simulate(UniformGLR(delta=0.1), two_instances(), jax.random.key(3), 30, 10**5,
                   devices=jax.devices("cpu")[:1])
    for out in outs:
        got = np.load(out)
        for name in ("samples", "pulls", "answer", "steps"):
            np.testing.assert_array_equal(got[name], getattr(one, name))
