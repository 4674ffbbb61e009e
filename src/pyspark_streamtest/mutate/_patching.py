"""Putting a watched call in place of PySpark's, for the time of one build, and back."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from ..core.attributes import replaced_attribute as replaced_attribute
from ..errors import hide_our_frames
from ._sites import Mutant

__tracebackhide__ = hide_our_frames


def unpatched(method: Callable[..., Any]) -> Callable[..., Any]:
    return getattr(method, "__wrapped_original__", method)


def retitled(mutant: Mutant, reached: str) -> Mutant:
    """A carried mutant named for what its column reached: a comparison or interval of a
    join condition is a join bound, of a filter a filter bound."""
    kind = ("join bound" if reached == "join" else "filter") if mutant.kind in (
        "comparison", "join bound") else mutant.kind
    if kind == "join bound" and mutant.kind == "comparison":
        kind = "join strictness"
    return Mutant(mutant.site, mutant.operator, kind, mutant.original, mutant.replacement,
                  mutant.code)


def rebind(restore: ExitStack, original: object, replacement: object, root: str) -> None:
    """Replace ``original`` wherever a module binds it: PySpark's functions modules, and
    the user's modules under ``root`` (``from pyspark.sql.functions import window``)."""
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        name = getattr(module, "__name__", "")
        if not (name.startswith("pyspark.sql.functions")
                or (path.startswith(root) and "site-packages" not in path)):
            continue
        for key, value in list(vars(module).items()):
            if value is original:
                restore.enter_context(_bound(module, key, replacement))


@contextmanager
def _bound(module: Any, key: str, value: object) -> Iterator[None]:
    old = getattr(module, key)
    setattr(module, key, value)
    try:
        yield
    finally:
        setattr(module, key, old)
