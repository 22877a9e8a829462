"""Store the figure and tables of an experiment's run for the documentation's gallery.

    python docs/gallery/collect.py RESULTS_DIR [NAME ...]

copies, for each NAME (default: every experiment with a folder under RESULTS_DIR), the PNG
figures and Markdown tables that ``python -m experiments NAME --out RESULTS_DIR/NAME`` wrote into
``docs/gallery/NAME/``, with ``run.json``: the command, the commit of the library, the date, the
machine and the versions, read from the run's ``metadata.json``.  The gallery page
(``docs/hooks/pages.py``) shows what is stored here; nothing in this folder is computed when the
site is built.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def collect(results: Path, name: str) -> Path:
    src = results / name
    meta = json.loads((src / "metadata.json").read_text())
    dst = HERE / name
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir()
    for f in sorted(src.iterdir()):
        if f.suffix in (".png", ".md"):
            shutil.copy2(f, dst / f.name)
    argv = meta["command"].split()
    command = "python -m experiments " + " ".join(a for a in argv[1:] if not a.startswith("/"))
    command = command.replace(" --out", "")
    when = datetime.fromtimestamp((src / "metadata.json").stat().st_mtime, timezone.utc)
    run = {
        "command": command.strip(),
        "commit": _commit(),
        "date": when.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}, {meta.get('backend', 'cpu')}), "
                   f"jax {meta.get('jax')}, jaxlib {meta.get('jaxlib')}",
    }
    (dst / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    return dst


def main(argv: list[str]) -> int:
    results = Path(argv[0])
    names = argv[1:] or sorted(p.name for p in results.iterdir() if (p / "metadata.json").exists())
    for name in names:
        print(collect(results, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
