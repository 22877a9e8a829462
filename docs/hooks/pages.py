"""MkDocs hooks: the pages whose content comes from the code, so that it cannot go stale.

* ``api/index.md``: a table of every name of ``jaxbandits.__all__``, of the public names of
  ``jaxbandits.algorithms`` and of ``jaxbandits.rules.__all__``, each linked to its reference
  entry.  The links are cross-references, so a public name missing from the reference fails the
  strict build.
* ``api/cli.md``: the text ``jaxbandits --help`` prints.
* every page: the math that ``pymdownx.arithmatex`` marked (``\\( ... \\)`` inline, ``\\[ ... \\]`` on its
  own line) becomes MathML, which browsers render natively: the site needs no script and no
  network to show its equations.
* ``gallery.md``: a table of every reproduction that ``python -m experiments`` lists, and one
  generated page for each, ``gallery/<name>.md`` (its description, command and times on 2 CPU
  cores), with the figures and tables of its stored
  run where ``docs/gallery/<name>/`` holds one (``docs/gallery/collect.py`` stores them; its
  ``run.json`` names the command, commit, date and machine, and may name the tables to show and
  add a note).
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


def experiments() -> dict[str, object]:
    """The reproductions ``python -m experiments`` lists: name -> module."""
    runner = _import("experiments._runner")
    return {name: _import(f"experiments.{mod}") for name, mod in runner.discover().items()}


def _times(name: str) -> tuple[str, str]:
    quick, full, how = _import("experiments._runner").TIMES.get(name, (None, None, ""))
    note = {"measured": "measured", "estimate": "estimated from the quick run",
            "lower estimate": "a lower estimate from the quick run"}.get(how, "")
    return _duration(quick), f"{_duration(full)} ({note})" if note else _duration(full)


def _stored(name: str) -> tuple[dict | None, list[Path]]:
    """The stored run's ``run.json`` (None without one) and its figures."""
    meta_path = GALLERY / name / "run.json"
    if not meta_path.exists():
        return None, []
    return json.loads(meta_path.read_text()), sorted((GALLERY / name).glob("*.png"))


def gallery_index() -> str:
    """The gallery's table: every reproduction, its times and its first figure, linking to its page."""
    rows = ["| reproduction | what | `--quick` | full size | figure |", "| --- | --- | --- | --- | --- |"]
    for name, module in experiments().items():
        quick, full = _times(name)
        meta, figures = _stored(name)
        thumb = (f'[![{name}](gallery/{name}/{figures[0].name}){{ width="220" }}](gallery/{name}.md)'
                 if figures else ("tables only" if meta else "not stored"))
        rows.append(f"| [{name}](gallery/{name}.md) | {_text(getattr(module, 'DESCRIPTION', ''))} | {quick} | {full} | {thumb} |")
    return "\n".join(rows)


def gallery_page(name: str, module) -> str:
    """The page of one reproduction: description, command, times, and the stored run's figures and
    tables."""
    desc = getattr(module, "DESCRIPTION", "")
    doc = (inspect.getdoc(module) or "").split("\n\n", 1)[0].replace("\n", " ").strip()
    if not doc.endswith("."):  # a paragraph that leads into a list: the description says it
        doc = ""
    quick, full = _times(name)
    out = [f"# {name}\n", f"**{_text(desc)}**\n"]
    if doc:
        out.append(f"{_text(doc)}\n")
    out.append("```bash\npython -m experiments " + name + " --quick   # full size: drop --quick\n```\n")
    out.append("| size | time on 2 CPU cores | on a GPU |\n| --- | --- | --- |")
    out.append(f"| `--quick` | {quick} | not measured |")
    out.append(f"| full | {full} | not measured |\n")
    meta, figures = _stored(name)
    if meta is None:
        out.append("No run of this reproduction is stored with the documentation: the command above "
                   "writes its figures and tables under `results/" + name + "/`.\n")
        return "\n".join(out)
    out.append(f"Below, the run `{meta['command']}` at commit `{meta['commit']}` on {meta['date']} "
               f"({meta['machine']})." + ("  A `--quick` run is smaller than the paper's (fewer "
               "replications and points); the full size is the paper's protocol." if "--quick" in meta["command"]
               else "") + "\n")
    if meta.get("note"):
        out.append(_text(meta["note"]) + "\n")
    for png in figures:
        out.append(f"[![{name}: {png.stem}]({name}/{png.name})]({name}/{png.name})\n")  # click: full size
    tables = [GALLERY / name / t for t in meta["tables"]] if "tables" in meta else sorted((GALLERY / name).glob("*.md"))
    for table in tables:
        out.append(_demote(table.read_text()) + "\n")
    return "\n".join(out)


def on_files(files, config):
    """One generated page per reproduction, ``gallery/<name>.md``, linked from the gallery's table."""
    from mkdocs.structure.files import File, InclusionLevel

    for name, module in experiments().items():
        files.append(File.generated(config, f"gallery/{name}.md", content=gallery_page(name, module),
                                    inclusion=InclusionLevel.NOT_IN_NAV))
    return files


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
        markdown = markdown.replace("<!-- gallery -->", gallery_index())
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
