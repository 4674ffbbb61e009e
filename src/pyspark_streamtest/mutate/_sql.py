"""The spots of a SQL expression's text a mutant changes: comparisons (``<`` ↔ ``<=``,
``>`` ↔ ``>=``) and interval literals (one unit each way), found outside quoted
strings and identifiers. The text is changed, never parsed: Spark parses the mutant
as it parsed the original."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import hide_our_frames
from ._duration_texts import changed, parse_duration

__tracebackhide__ = hide_our_frames

_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_INTERVAL = re.compile(
    r"interval\s+(?:'(\d+)'\s*(microsecond|millisecond|second|minute|hour|day|week)s?\b"
    r"|((?:\d+\s*(?:microsecond|millisecond|second|minute|hour|day|week)s?\b\s*)+))",
    re.IGNORECASE)


@dataclass(frozen=True)
class Spot:
    """One changeable piece of a text: ``kind`` (``compare`` or ``interval``), its
    place and the original piece."""

    kind: str
    start: int
    end: int
    text: str

    def mutants(self) -> list[tuple[str, str]]:
        """(what was done, the replacement piece) for this spot."""
        if self.kind == "compare":
            return [(f"{self.text} → {_FLIP[self.text]}", _FLIP[self.text])]
        match = _INTERVAL.fullmatch(self.text.strip())
        assert match is not None  # found by the same pattern
        written = (f"{match.group(1)} {match.group(2)}" if match.group(1)
                   else match.group(3))
        duration = parse_duration(written)
        if duration is None:
            return []
        return [(name, f"INTERVAL {new.render()}")
                for name, new in changed(duration, double=False)]


def spots(text: str) -> list[Spot]:
    """Every comparison and interval literal of ``text``, in order."""
    found: list[Spot] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            end = text.find(c, i + 1)
            while end != -1 and c != "`" and _escaped(text, end):
                end = text.find(c, end + 1)
            i = n if end == -1 else end + 1
            continue
        if c in "<>":
            two = text[i:i + 2]
            if text[i:i + 3] == "<=>" or two == "<>":  # null-safe equal, not equal
                i += 3 if two == "<=" else 2
                continue
            if two in ("<<", ">>"):  # shifts (Spark 4): <<, >>, >>>
                while i < n and text[i] == c:
                    i += 1
                continue
            if i and text[i - 1] in "=-!":  # =>, ->, and !> (<=) / !< (>=)
                i += 1
                continue
            op = two if two in ("<=", ">=") else c
            found.append(Spot("compare", i, i + len(op), op))
            i += len(op)
            continue
        if c in "iI" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            match = _INTERVAL.match(text, i)
            if match:
                end = match.end()
                while end > i and text[end - 1].isspace():
                    end -= 1
                found.append(Spot("interval", i, end, text[i:end]))
                i = end
                continue
        i += 1
    return found


def _escaped(text: str, index: int) -> bool:
    """Whether the quote at ``index`` is escaped: an odd number of backslashes before
    it (two in a row are one backslash, escaped)."""
    backslashes = 0
    while index - backslashes - 1 >= 0 and text[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def replaced(text: str, spot: Spot, piece: str) -> str:
    """``text`` with ``spot`` replaced by ``piece``."""
    return text[:spot.start] + piece + text[spot.end:]
