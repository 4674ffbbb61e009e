"""A mkdocs hook: no line of a fenced code block in the pages is wider than 78 characters.

The site's code column shows about 78 characters at 1280 px before it scrolls; a wider
line is cut off. ``mkdocs build --strict`` fails on the warning this logs for each wide
line. ``tests/unit/test_docs_quality.py`` runs the same check on every page and on the
README, without mkdocs.

A block that shows a program's output as printed (a table wider than the column) may opt
out: the line before its fence is ``<!-- code-width: as printed -->``.

Registered in ``mkdocs.yml`` (``hooks: [docs/_ext/code_width.py]``).
"""

from __future__ import annotations

import logging
import re
from typing import Any

MAX_WIDTH = 78

# Pages whose wide lines others are fixing: reported, not failed. Empty this as they go.
PENDING: frozenset[str] = frozenset()

AS_PRINTED = "<!-- code-width: as printed -->"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")

log = logging.getLogger("mkdocs.plugins.code_width")


def code_lines(text: str, *, as_printed: bool = True) -> list[tuple[int, str, str]]:
    """(1-based line number, fence language, line without the fence's indent) for every
    line inside a fenced code block of ``text``. Fences may be indented (admonitions,
    tabs); the closing fence is the same character, at least as long, with no info.
    ``as_printed=False`` leaves out the blocks marked :data:`AS_PRINTED`."""
    lines = text.splitlines()
    found: list[tuple[int, str, str]] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if not opening:
            continue
        indent, fence = opening["indent"], opening["fence"]
        words = opening["info"].split()
        language = words[0].lower() if words else ""
        skip = not as_printed and index >= 2 and lines[index - 2].strip() == AS_PRINTED
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if (closing and closing["fence"][0] == fence[0]
                    and len(closing["fence"]) >= len(fence) and not closing["info"].strip()):
                break
            line = lines[index]
            line = line[len(indent):] if line.startswith(indent) else line.lstrip()
            if not skip:
                found.append((index + 1, language, line))
            index += 1
        index += 1
    return found


def wide_lines(text: str, limit: int = MAX_WIDTH) -> list[tuple[int, str, str]]:
    """The code lines of ``text`` wider than ``limit`` characters, but for the blocks
    marked :data:`AS_PRINTED`."""
    return [entry for entry in code_lines(text, as_printed=False) if len(entry[2]) > limit]


def on_page_markdown(markdown: str, *, page: Any, **kwargs: Any) -> str:
    path = page.file.src_uri
    for number, language, line in wide_lines(markdown):
        message = (f"{path}:{number}: a ```{language} line of {len(line)} characters "
                   f"(at most {MAX_WIDTH}): {line.strip()[:60]}...")
        if path in PENDING:
            log.info(message)
        else:
            log.warning(message)
    return markdown
