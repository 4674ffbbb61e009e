"""Spark's duration strings (``"10 seconds"``, ``"1 hour 30 minutes"``,
``"interval 500 milliseconds"``) read exactly, changed by a unit, and written back in
the smallest unit they were written in (``"1 hour 30 minutes"`` doubled is ``"180
minutes"``), or a smaller one where the amount does not divide (``"1 second"`` halved is
``"500 milliseconds"``).

"One unit" is one of the smallest unit the string names (``"10 minutes"`` → 9 and 11
minutes), except for a single unit, where it is one of the next smaller unit
(``"1 hour"`` → 59 and 61 minutes): a window "a minute too long" rather than twice as
long. Months and years (not a fixed length) are not read: such a string makes no
mutant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 604_800_000_000,
}
_SMALLER = {"millisecond": "microsecond", "second": "millisecond", "minute": "second",
            "hour": "minute", "day": "hour", "week": "day"}
_PART = re.compile(r"(\d+)\s*(microsecond|millisecond|second|minute|hour|day|week)s?",
                   re.IGNORECASE)
_WHOLE = re.compile(
    r"\s*(?:interval\s+)?((?:\d+\s*(?:microsecond|millisecond|second|minute|hour|day|week)"
    r"s?\s*)+)", re.IGNORECASE)


@dataclass(frozen=True)
class Duration:
    """An exact duration and the smallest unit it was written in."""

    micros: int
    unit: str

    def render(self) -> str:
        """Written in ``unit``, or in the largest smaller unit that divides it where
        ``unit`` does not; one unit only, never folded into larger ones (``"90
        minutes"``, not ``"1 hour 30 minutes"``). Spark reads either as the same
        duration."""
        unit = self.unit
        while self.micros % _MICROS[unit]:
            unit = _SMALLER[unit]
        amount = self.micros // _MICROS[unit]
        return f"{amount} {unit}{'' if amount == 1 else 's'}"

    def step(self) -> int:
        """One unit, in microseconds (see the module docstring)."""
        if self.micros == _MICROS[self.unit] and self.unit in _SMALLER:
            return _MICROS[_SMALLER[self.unit]]
        return _MICROS[self.unit]


def parse_duration(text: object) -> Duration | None:
    """``text`` as Spark reads a duration string, or None if it is not one this module
    changes (not a string, months or years, fractions, negative amounts)."""
    if not isinstance(text, str):
        return None
    whole = _WHOLE.fullmatch(text)
    if whole is None:
        return None
    parts = _PART.findall(whole.group(1))
    micros = sum(int(amount) * _MICROS[unit.lower()] for amount, unit in parts)
    smallest = min((unit.lower() for _, unit in parts), key=_MICROS.__getitem__)
    return Duration(micros, smallest)


def durations_in(text: str) -> list[Duration]:
    """Every amount-and-unit ``text`` names, in order (``"a < b + interval 10 minutes"``
    → 10 minutes), each on its own: the parts of ``"1 hour 30 minutes"`` are two."""
    return [Duration(int(amount) * _MICROS[unit.lower()], unit.lower())
            for amount, unit in _PART.findall(text)]


def from_millis(ms: int) -> Duration:
    """A duration given as integer milliseconds, its unit the largest that divides it
    (600000 → minutes), so that "one unit" reads as the author wrote it."""
    micros = ms * 1_000
    unit = "millisecond"
    for candidate in ("second", "minute", "hour", "day"):
        if micros and micros % _MICROS[candidate] == 0:
            unit = candidate
    return Duration(micros, unit)


def changed(duration: Duration, *, zero: bool = False, half: bool = False,
            double: bool = True, less: bool = True, more: bool = True,
            ) -> list[tuple[str, Duration]]:
    """The mutants of ``duration``: (what was done, the new duration), without repeats
    and without the original; none below zero, none of zero unless ``zero``."""
    step = duration.step()
    wanted = []
    if zero:
        wanted.append(("zero", 0))
    if half:
        wanted.append(("half", duration.micros // 2))
    if double:
        wanted.append(("double", duration.micros * 2))
    if less:
        wanted.append(("one unit less", duration.micros - step))
    if more:
        wanted.append(("one unit more", duration.micros + step))
    seen = {duration.micros}
    out = []
    for name, micros in wanted:
        if micros < 0 or (micros == 0 and not zero) or micros in seen:
            continue
        seen.add(micros)
        out.append((name, Duration(micros, duration.unit)))  # render() steps down
    return out
