"""Mutation testing of streaming semantics: would the tests notice if the watermark
were wrong? See ``docs/how-to/mutation-testing.md`` and ``pytest --streamtest-mutate``.

A :class:`Site` is one streaming decision in the user's code (the call, its file and
line); a :class:`Mutant` one change of it; a :class:`MutantResult` what became of it
(killed, survived, invalid or unreached); a :class:`Score` the counts."""

from ..errors import hide_our_frames
from ._sites import Mutant, Site
from .results import MutantResult, Score

__tracebackhide__ = hide_our_frames

__all__ = ["Mutant", "MutantResult", "Score", "Site"]
