"""MkDocs hooks: the pages whose content comes from the code, so that it cannot go stale.

* ``api/index.md``: a table of every name of ``jaxbandits.__all__``, of the public names of
  ``jaxbandits.algorithms`` and of ``jaxbandits.rules.__all__``, each linked to its reference
  entry.  The links are cross-references, so a public name missing from the reference fails the
  strict build.
* ``api/cli.md``: the text ``jaxbandits --help`` prints.
* every page: the math that ``pymdownx.arithmatex`` marked (``\\( ... \\)`` inline, ``\\[ ... \\]`` on its
  own line) becomes MathML, which browsers render natively: the site needs no script and no
  network to show its equations.
* ``gallery.md``: one section per reproduction that ``python -m experiments`` lists (its
  description, command and times on 2 CPU cores), with the figure and the table of its stored
  run where ``docs/gallery/<name>/`` holds one (``docs/gallery/collect.py`` stores them).
"""
from __future__ import annotations

import html as _html
import inspect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"


def _import(name: str):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import importlib

    return importlib.import_module(name)


def identifier(obj, owner: str, name: str) -> str:
    """The reference identifier (dotted path where the API reference documents it) of ``obj``,
    reached as ``owner.name``."""
    if inspect.ismodule(obj):
        return obj.__name__
    module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module and qual and module.startswith("jaxbandits"):
        return f"{module}.{qual}"
    return f"{owner}.{name}"


def summary_line(obj) -> str:
    """The first sentence of ``obj``'s docstring, on one line."""
    doc = inspect.getdoc(obj) if not isinstance(obj, str) else None
    if not doc:
        return ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ")
    first = re.sub(r":(?:func|class|mod|data|meth|attr|exc):`~?([^`]+)`", r"`\1`", first)
    # a star after a letter or bracket (T*, psi*) is a character, not emphasis; code spans are kept
    parts = re.split(r"(``.+?``|`[^`]+`)", first)
    first = "".join(p if i % 2 else re.sub(r"(?<=[\w)\]])\*(?!\*)", r"\\*", p) for i, p in enumerate(parts))
    return first.replace("|", "\\|")


def public_names(module) -> list[str]:
    """The public names of a package: its ``__all__``, else every name not starting with an
    underscore that is not a submodule."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and not inspect.ismodule(v))


def names_table(owner: str, prefix: str) -> str:
    module = _import(owner)
    rows = ["| name | what |", "| --- | --- |"]
    for name in public_names(module):
        if name == "__version__":
            rows.append(f"| `{prefix}__version__` | the version of the library, `{module.__version__}` |")
            continue
        obj = getattr(module, name)
        ident = identifier(obj, owner, name)
        rows.append(f"| [`{prefix}{name}`][{ident}] | {summary_line(obj)} |")
    return "\n".join(rows)


def cli_usage() -> str:
    return "```text\n" + _import("jaxbandits.cli").USAGE + "\n```"


def _duration(seconds) -> str:
    return _import("experiments._runner")._duration(seconds)


def gallery() -> str:
    runner = _import("experiments._runner")
    found = runner.discover()
    out = []
    for name, mod in found.items():
        module = _import(f"experiments.{mod}")
        desc = getattr(module, "DESCRIPTION", "")
        doc = (inspect.getdoc(module) or "").split("\n\n", 1)[0].replace("\n", " ").strip()
        if not doc.endswith("."):  # a paragraph that leads into a list: the description says it
            doc = ""
        quick, full, how = runner.TIMES.get(name, (None, None, ""))
        full_note = {"measured": "measured", "estimate": "estimated from the quick run",
                     "lower estimate": "a lower estimate from the quick run"}.get(how, "")
        out.append(f"## {name}\n")
        out.append(f"**{_text(desc)}**\n")
        if doc:
            out.append(f"{_text(doc)}\n")
        out.append("```bash\npython -m experiments " + name + " --quick   # full size: drop --quick\n```\n")
        out.append("| size | time on 2 CPU cores | on a GPU |\n| --- | --- | --- |")
        out.append(f"| `--quick` | {_duration(quick)} | not measured |")
        out.append(f"| full | {_duration(full)} ({full_note}) | not measured |\n")
        stored = GALLERY / name
        meta_path = stored / "run.json"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            out.append(f"Below, the run `{meta['command']}` at commit `{meta['commit']}` on {meta['date']} "
                       f"({meta['machine']}).  A `--quick` run is smaller than the paper's (fewer "
                       "replications and points); the full size is the paper's protocol.\n")
            for png in sorted(stored.glob("*.png")):
                out.append(f"![{name}: {png.stem}](gallery/{name}/{png.name})\n")
            for table in sorted(stored.glob("*.md")):
                out.append(_demote(table.read_text()) + "\n")
        else:
            out.append("No run of this reproduction is stored with the documentation: the command above "
                       "writes its figure and table under `results/" + name + "/`.\n")
    return "\n".join(out)


def _text(text: str) -> str:
    """Plain text as Markdown: a ``*`` (as in ``T*``, ``psi*``) is a character, not emphasis."""
    return text.replace("*", "\\*")


def _demote(markdown: str) -> str:
    """A stored table's headings as bold captions (they sit under the experiment's heading and stay
    out of the page's table of contents)."""
    lines = []
    for line in markdown.splitlines():
        if line.startswith("#"):
            line = "**" + _text(line.lstrip("#").strip()) + "**"
        lines.append(line)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    if src == "api/index.md":
        markdown = markdown.replace("<!-- front-door -->", names_table("jaxbandits", "jb."))
        markdown = markdown.replace("<!-- algorithms -->", names_table("jaxbandits.algorithms", "jb.algorithms."))
        markdown = markdown.replace("<!-- rules -->", names_table("jaxbandits.rules", "jb.rules."))
    elif src == "api/cli.md":
        markdown = markdown.replace("<!-- cli-usage -->", cli_usage())
    elif src == "gallery.md":
        markdown = markdown.replace("<!-- gallery -->", gallery())
    return markdown


_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)


def _mathml(match: re.Match) -> str:
    from latex2mathml.converter import convert

    tag, body = match.groups()
    tex = _html.unescape(body).strip()
    display = tex.startswith("\\[")
    tex = tex[2:-2].strip()
    return convert(tex, display="block" if display else "inline")


def on_page_content(html: str, page, config, files) -> str:
    return _MATH.sub(_mathml, html)
