"""A griffe extension for the API reference: the library's docstrings are written in plain text
with a few reStructuredText habits (``:func:`name``` roles, ``::`` before a literal block, simple
tables framed by ``===`` rules); this rewrites those into Markdown before mkdocstrings renders them.

* a role ``:func:`~a.b.c``` becomes the code span ``c`` (``a.b.c`` without the tilde);
* a simple table becomes a fenced text block (its columns stay aligned);
* ``::`` ending a paragraph becomes ``:`` (the indented block after it is already a code block);
* ``*`` right after a letter, digit or closing bracket (``T*(theta)``, ``psi*``) is escaped, so
  two of them in one paragraph do not turn the text between them into italics.
"""
from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc|obj|const):`(~?)([^`]+)`")
_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")
_STAR = re.compile(r"(?<=[\w)\]])\*(?!\*)")
_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")


def _role(m: re.Match) -> str:
    tilde, target = m.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def _escape_stars(line: str) -> str:
    parts = _CODE_SPAN.split(line)
    return "".join(p if i % 2 else _STAR.sub(r"\\*", p) for i, p in enumerate(parts))


def convert(text: str) -> str:
    """The Markdown of one docstring."""
    text = _ROLE.sub(_role, text)
    out: list[str] = []
    lines = text.split("\n")
    i, fence, table = 0, False, False
    while i < len(lines):
        line = lines[i]
        if _RULE.match(line) and not fence:
            if not table:
                out.append("```text")
                out.append(line)
                table = True
            else:
                out.append(line)
                out.append("```")
                table = False
            i += 1
            continue
        if table:
            out.append(line)
            i += 1
            continue
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append(line)
            i += 1
            continue
        indented = line.startswith("    ") and out and (not out[-1].strip() or out[-1].startswith("    "))
        if fence or indented:
            out.append(line)
        else:
            if line.rstrip().endswith("::") and not line.rstrip().endswith(" ::"):
                line = line.rstrip()[:-1]
            out.append(_escape_stars(line))
        i += 1
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded objects with :func:`convert`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
