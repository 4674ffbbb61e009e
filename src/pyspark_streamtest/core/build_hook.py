"""The seam through which a tool watches or changes how a topology is built (the
mutation tester, :mod:`pyspark_streamtest.mutate`): the driver calls the hook in force
around each call of a topology function or ``from_app`` job, and for each output's
mode and each ``from_app`` query's trigger interval, and once the function has
declared its outputs. No hook is in force unless a tool
installs one with :func:`hooked`; then the driver's behaviour is the hook's to change."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


class BuildHook:
    """What a hook may do; this base changes nothing."""

    def building(self, function: Callable[..., object], spark: Any
                 ) -> AbstractContextManager[None]:
        """Open while ``function`` declares a topology on ``spark`` (the user's
        session)."""
        return nullcontext()

    def output_mode(self, output: str, mode: str) -> str:
        """The output mode output ``output`` runs in, given the declared ``mode``."""
        return mode

    def trigger_ms(self, output: str, interval_ms: int | None) -> int | None:
        """The trigger interval of a ``from_app`` query, given the job's."""
        return interval_ms

    def built(self, shapes: Callable[[], Mapping[str, str]], left_out: tuple[str, ...]
              ) -> None:
        """The function has declared its outputs. ``shapes()`` gives each output's
        shape: its mode, trigger and plan as text two builds of the same query share;
        ``left_out``: the queries of a ``from_app`` job that do not run
        (``from_app(outputs=...)``)."""


_NONE = BuildHook()
_hook: BuildHook = _NONE


def build_hook() -> BuildHook:
    """The hook in force (one that changes nothing, unless a tool installed one)."""
    return _hook


@contextmanager
def hooked(hook: BuildHook) -> Iterator[None]:
    """Put ``hook`` in force while open; the previous one after, always."""
    global _hook
    before, _hook = _hook, hook
    try:
        yield
    finally:
        _hook = before
