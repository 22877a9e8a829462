"""Every Python example of README.md runs on its own, in a fresh process, and says how long it takes."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(text: str) -> list[str]:
    """The bodies of the README's ```python fenced blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


BLOCKS = python_blocks((ROOT / "README.md").read_text())


def test_readme_has_examples():
    assert len(BLOCKS) >= 2
    assert python_blocks("x\n```python\nprint(1)\n```\n```bash\nls\n```\n") == ["print(1)\n"]


@pytest.mark.parametrize("i", range(len(BLOCKS)), ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs_alone(i, tmp_path):
    code = BLOCKS[i]
    # the first line says how long the example takes
    assert re.match(r"# .*\d+ s on 2 CPU cores", code.splitlines()[0]), code.splitlines()[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)  # a guard against a hung example, not a time limit
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "the example printed nothing"
