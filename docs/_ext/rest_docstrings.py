"""A griffe extension: render the package's reST-flavoured docstrings as Markdown.

The docstrings in ``src/pyspark_streamtest`` use a few reST habits that Markdown does not
know. Before mkdocstrings renders them, this rewrites:

* roles (``:class:`~pyspark_streamtest.TestRecord```, ``:meth:`restart```,
  ``:meth:`title <path>```) into code that links to the object's entry in the API
  reference when there is one (an *optional* autorefs cross-reference: an object the site
  does not document stays plain code, without a warning);
* ``text::`` followed by an indented block, and ``.. code-block:: python`` blocks, into
  fenced Python code;
* doctest lines (``>>> ...``) into a fenced ``pycon`` block (Markdown would read the
  ``>`` as quotes);
* a run of lines that each start with a code term and two spaces (a plain-text table of
  names and meanings, as in ``pyspark_streamtest.kafka``) into a bullet list.

Loaded by ``mkdocs.yml`` (``extensions: [docs/_ext/rest_docstrings.py]``); the source
docstrings stay as they are.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(class|meth|func|mod|attr|data|exc|obj):`(?P<body>[^`]+)`")
_CALLABLE_ROLES = {"meth", "func"}
_TERM = re.compile(r"^(?P<term>``[^`]+``)\s{2,}(?P<text>\S.*)$")
_PACKAGE = "pyspark_streamtest"


class RestDocstrings(Extension):
    """Rewrite every docstring of the package once the object tree is complete."""

    def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
        if pkg.path != _PACKAGE:
            return
        self._collection = loader.modules_collection
        self._face = _face_names(pkg)
        self._walk(pkg)

    def _walk(self, obj: Object) -> None:
        if obj.docstring is not None:
            text = _blocks(obj.docstring.value)
            obj.docstring.value = _ROLE.sub(lambda m: self._role(m, obj), text)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member)

    # --- roles ---------------------------------------------------------------------------
    def _role(self, match: re.Match[str], obj: Object) -> str:
        role, body = match.group(1), match.group("body").strip()
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        else:
            target = body.lstrip("~")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        if role in _CALLABLE_ROLES and not title.endswith(")"):
            title += "()"
        code = f"<code>{title}</code>"
        identifier = None if target.startswith(".") else self._resolve(target, obj)
        if identifier is None:
            return code
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    def _resolve(self, target: str, obj: Object) -> str | None:
        scopes = []
        scope: Any = obj
        while scope is not None:  # the object itself, its class, its module, ...
            scopes.append(scope.path)
            scope = scope.parent
        candidates = [target] if target.startswith(_PACKAGE + ".") else []
        candidates += [f"{path}.{target}" for path in scopes]
        candidates += [f"{_PACKAGE}.{target}", f"{_PACKAGE}.errors.{target}"]
        for candidate in candidates:
            if self._exists(candidate):
                return self._public(candidate)
        return None

    def _exists(self, path: str) -> bool:
        try:
            self._collection[path]
        except Exception:  # KeyError, or an alias that does not resolve
            return False
        return True

    def _public(self, path: str) -> str:
        """The package-face name of ``path`` where it has one (the name the API pages use)."""
        for canonical, face in self._face.items():
            if path == canonical or path.startswith(canonical + "."):
                return face + path[len(canonical):]
        return path


def _face_names(pkg: Any) -> dict[str, str]:
    """{canonical path: face path} for every name the package re-exports."""
    names = {}
    for name, member in pkg.members.items():
        if member.is_alias and not name.startswith("_"):
            names[member.target_path] = f"{_PACKAGE}.{name}"
    return dict(sorted(names.items(), key=lambda item: -len(item[0])))


# --- literal blocks ------------------------------------------------------------------------
def _blocks(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while index < len(lines) and lines[index].strip().startswith((">>>", "...")):
                block.append(lines[index].strip())
                index += 1
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        if _TERM.match(line) and index + 1 < len(lines) and _TERM.match(lines[index + 1]):
            while index < len(lines) and _TERM.match(lines[index]):
                term = _TERM.match(lines[index])
                assert term is not None
                entry = f"- {term['term']}: {term['text']}"
                index += 1
                while index < len(lines) and lines[index].strip() and _indent(lines[index]) > 0:
                    entry += " " + lines[index].strip()
                    index += 1
                out.append(entry)
            continue
        code_block = stripped.startswith(".. code-block::")
        if code_block or (stripped.endswith("::") and not stripped.startswith("..")):
            body, end = _indented_block(lines, index + 1, _indent(line))
            if body is not None:
                if not code_block:
                    text_part = line.rstrip()[:-2].rstrip()
                    if text_part:
                        out.append(text_part + ":")
                indent = " " * _indent(line)
                out += ["", f"{indent}```python", *(indent + b for b in body), f"{indent}```", ""]
                index = end
                continue
        out.append(line)
        index += 1
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indented_block(lines: list[str], start: int, base: int) -> tuple[list[str] | None, int]:
    """The block indented deeper than ``base`` after blank lines from ``start``, dedented,
    and the index after it; (None, start) when there is none."""
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    if index >= len(lines) or _indent(lines[index]) <= base:
        return None, start
    block = []
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > base):
        block.append(lines[index])
        index += 1
    while block and not block[-1].strip():
        block.pop()
    return textwrap.dedent("\n".join(block)).split("\n"), index
