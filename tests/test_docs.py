"""The documentation site builds with warnings as errors, documents every public name, and every
Python example of its tutorials and reference pages runs.

The site (``mkdocs.yml``) is built once per test session with ``mkdocs build --strict``: a broken
link or cross-reference, a docstring griffe cannot parse, or a page outside the navigation fails
it.  The examples run as the README's do (tests/test_readme.py): in a fresh process, from an empty
folder, each block in its own namespace (the blocks of one page share the process, so they share
its compiled programs).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_spec = importlib.util.spec_from_file_location("docs_page_hooks", DOCS / "hooks" / "pages.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)

TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
REFERENCE = sorted((DOCS / "api").glob("*.md"))


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python fenced blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def _env(cache: Path | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    if cache is not None:
        # one persistent compilation cache for the examples of the session (RUNNER turns it on):
        # pages that run the same algorithm on the same shapes compile it once, each page still
        # in its own process
        env["JAXBANDITS_DOCS_TEST_CACHE"] = str(cache)
    return env


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("xla_cache")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as e:  # a clear message, not a skip: CI installs the docs extra
        pytest.fail(f"the documentation tools are not installed ({e}): pip install -e '.[test,docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=dict(_env(), NO_MKDOCS_2_WARNING="1"), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def inventory(site: Path) -> set[str]:
    """The identifiers of the site's object inventory (``objects.inv``, Sphinx format 2)."""
    raw = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):
        header_end = raw.index(b"\n", header_end) + 1
    body = zlib.decompress(raw[header_end:]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line.strip()}


def test_site_builds_strict(site):
    for page in ("index.html", "api/simulate/index.html", "tutorials/getting_started/index.html",
                 "gallery/index.html", "design/index.html", "measurements/index.html"):
        assert (site / page).exists(), page


def test_every_public_name_is_in_the_reference(site):
    import jaxbandits as jb

    have = inventory(site)
    missing = []
    for owner in ("jaxbandits", "jaxbandits.algorithms", "jaxbandits.rules"):
        module = importlib.import_module(owner)
        for name in hooks.public_names(module):
            if name == "__version__":
                continue
            ident = hooks.identifier(getattr(module, name), owner, name)
            if ident not in have:
                missing.append(f"{owner}.{name} ({ident})")
    assert not missing, f"public names without a reference entry: {missing}"
    assert "simulate" in jb.__all__ and "jaxbandits.engine.runner.simulate" in have


def test_every_reproduction_is_in_the_gallery(site):
    from experiments._runner import discover

    html = (site / "gallery" / "index.html").read_text()
    for name in discover():
        assert f'href="{name}/"' in html, name
        assert (site / "gallery" / name / "index.html").exists(), name
    for stored in (DOCS / "gallery").iterdir():
        if stored.is_dir():
            assert stored.name in discover(), f"docs/gallery/{stored.name} is not an experiment"
            for png in stored.glob("*.png"):
                assert (site / "gallery" / stored.name / png.name).exists(), png


def test_blocks_found():
    assert python_blocks("x\n```python\nprint(1)\n```\n```bash\nls\n```\n") == ["print(1)\n"]
    assert len(TUTORIALS) >= 6
    for page in TUTORIALS + REFERENCE + [DOCS / "index.md"]:
        for block in python_blocks(page.read_text()):
            # the first line says how long the example takes
            assert re.match(r"# .*\d+ s on 2 CPU cores", block.splitlines()[0]), (page.name, block[:80])


RUNNER = """
import os, sys, time
from jaxbandits import compilation_cache
compilation_cache.enable(os.environ["JAXBANDITS_DOCS_TEST_CACHE"], min_compile_seconds=0.0)
for page, i, block in {blocks!r}:
    t0 = time.time()
    exec(compile(block, f"<{{page}} block {{i}}>", "exec"), {{"__name__": "__main__"}})
    print(f"[{{page}} block {{i}}: {{time.time() - t0:.1f}} s]", file=sys.stderr)
"""


def _run_pages(pages: list[Path], tmp_path: Path, cache: Path):
    blocks = [(str(p.relative_to(DOCS)), i, b) for p in pages for i, b in enumerate(python_blocks(p.read_text()))]
    assert blocks, pages
    proc = subprocess.run([sys.executable, "-c", RUNNER.format(blocks=blocks)], cwd=tmp_path, env=_env(cache),
                          capture_output=True, text=True, timeout=1800)  # a guard against a hang, not a limit
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip(), "the examples printed nothing"
    print(proc.stderr[-2000:])


@pytest.mark.parametrize("page", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(page, tmp_path, xla_cache):
    _run_pages([page], tmp_path, xla_cache)


def test_reference_examples_run(tmp_path, xla_cache):
    """The examples of the reference pages and the home page, in one process (they share its
    compiled programs: most use the same algorithm on the same instance)."""
    _run_pages([DOCS / "index.md", *REFERENCE], tmp_path, xla_cache)


def test_help_is_one_usage_of_every_subcommand(capsys):
    from jaxbandits import cli

    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.count("usage:") == 1, out
    for command in (*cli.COMMANDS, "EXPERIMENT"):
        assert f"jaxbandits {command}" in out, command


def test_front_door():
    import jaxbandits as jb

    assert dir(jb) == sorted(jb.__all__)
    for name in jb.__all__:
        assert getattr(jb, name) is not None, name
    assert jb.simulate and jb.algorithms.RAGE and jb.instances.base.Instance and jb.rules.sampling.TopTwo
    import jaxbandits.engine as engine

    # the layout policy's tuning constants stay in their module, out of the public surface
    assert not [n for n in engine.__all__ if n.isupper() and n not in ("RESULTS", "COUNT_LIMIT")]
    assert hasattr(engine.layout, "CHUNK_LANES")


#: names docs/design.md cites that are not the project's own: JAX's, jaxlib's, or a file a command writes
NOT_OURS = {"NamedSharding", "_lapack.so", "table.md"}


@pytest.mark.parametrize("page", ["design.md", "architecture.md"])
def test_design_cites_code_that_exists(page):
    """Every file and every code name that the design pages put in backquotes exists in the
    project: they describe the code as it is (a renamed function or a removed module fails here)."""
    text = (DOCS / page).read_text()
    sources = [p for d in ("jaxbandits", "experiments", "benchmarks", "tests") for p in (ROOT / d).rglob("*.py")]
    code = "\n".join(p.read_text() for p in sources) + (ROOT / "pyproject.toml").read_text()
    names = {p.name for d in ("jaxbandits", "experiments", "benchmarks", "tests", "docs") for p in (ROOT / d).rglob("*")}
    names |= {p.name for p in ROOT.iterdir()}
    missing = []
    for quoted in sorted(set(re.findall(r"`([^`\n]+)`", text))):
        path = quoted.split("::")[0]
        if re.fullmatch(r"[\w/.\-]+\.(py|md|toml|npz|so)", path):
            if path not in NOT_OURS and Path(path).name not in names:
                missing.append(path)
            continue
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", quoted):
            snake = "_" in name.strip("_") and len(name) > 4
            camel = re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", name) is not None
            if (snake or camel) and name not in NOT_OURS and name not in code:
                missing.append(f"{name} (in `{quoted}`)")
    assert not missing, f"docs/{page} cites what the code does not have: {missing}"
