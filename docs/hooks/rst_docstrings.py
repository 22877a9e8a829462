"""A griffe extension for the API reference: the library's docstrings are written in plain text
with a few reStructuredText habits (``:func:`name``` roles, ``::`` before a literal block, simple
tables framed by ``===`` rules); this rewrites those into Markdown before mkdocstrings renders them.

* a role ``:func:`~a.b.c``` becomes the code span ``c`` (``a.b.c`` without the tilde);
* a simple table becomes a fenced text block (its columns stay aligned; its ````code```` marks are
  dropped, the block being code already);
* ``::`` ending a paragraph becomes ``:`` (the indented block after it is already a code block);
* a class docstring that describes its fields one per line (``name: what it holds``, as the
  library's NamedTuples and dataclasses do) gives each field that description, so the reference
  shows it beside the field rather than in a run-on paragraph;
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
            out.append(re.sub(r"``(.+?)``", r"\1", line))
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


_FIELD = re.compile(r"^(\w+): (.+)$")


def split_fields(text: str, fields: set[str]) -> tuple[str, dict[str, str]]:
    """The docstring without its paragraphs of ``field: description`` lines (every line of the
    paragraph a field's, or an indented continuation), and those descriptions by field."""
    kept, found = [], {}
    for para in text.split("\n\n"):
        lines = para.split("\n")
        current, described = None, {}
        for line in lines:
            m = _FIELD.match(line)
            if m and m.group(1) in fields:
                current = m.group(1)
                described[current] = m.group(2).strip()
            elif current is not None and line.startswith((" ", "\t")) and line.strip():
                described[current] += " " + line.strip()
            else:
                described = {}
                break
        if described:
            found.update(described)
        else:
            kept.append(para)
    return "\n\n".join(kept), found


class RstDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded objects with :func:`convert`; move the descriptions
    of a class's fields to the fields."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)

    def on_class_members(self, *, cls: griffe.Class, **kwargs) -> None:
        if cls.docstring is None:
            return
        fields = {name for name, member in cls.members.items()
                  if not member.is_alias and member.is_attribute and member.docstring is None}
        if not fields:
            return
        rest, found = split_fields(cls.docstring.value, fields)
        if not found:
            return
        cls.docstring.value = rest
        for name, description in found.items():
            member = cls.members[name]
            member.docstring = griffe.Docstring(convert(description), parent=member)
