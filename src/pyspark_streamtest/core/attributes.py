"""A class attribute replaced for a while and put back as it was: ``from_app``'s
interception and the mutation tester both patch PySpark's classes this way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames


@contextmanager
def replaced_attribute(owner: type, name: str, value: object) -> Iterator[None]:
    """``owner.name`` is ``value`` while open; then what it was, always: the class's own
    attribute again, or none of its own (the inherited one shows through)."""
    had_own = name in owner.__dict__
    old = owner.__dict__.get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if had_own:
            setattr(owner, name, old)
        else:
            delattr(owner, name)
