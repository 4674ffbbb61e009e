"""How a compared value shows as text: its stable JSON, a ``pytest.approx(...)`` object
as ``approx(2.5 ± 2.5e-06)``. Both the comparing (which sorts by it) and the report
(which prints it) use it; it compares nothing."""

from __future__ import annotations

from typing import Any

from ...errors import hide_our_frames
from ..stable import stable_json

__tracebackhide__ = hide_our_frames

_APPROX: dict[type, bool] = {}


def is_approx(value: Any) -> bool:
    """Whether ``value`` is a ``pytest.approx(...)`` object (known by its classes' names
    and modules, so that pytest is never imported here)."""
    kind = type(value)
    if kind not in _APPROX:
        _APPROX[kind] = any(base.__module__.split(".")[0] in ("pytest", "_pytest")
                            and base.__name__.startswith("Approx") for base in kind.__mro__)
    return _APPROX[kind]


def text_of(value: Any) -> str:
    """A normal value's JSON text, approx objects as ``approx(2.5 ± 2.5e-06)``."""
    def shown(item: Any) -> Any:
        if is_approx(item):
            text = repr(item) if repr(item).startswith("approx(") else f"approx({item!r})"
            return f"\0{text}\0"  # unquoted below
        if isinstance(item, (dict, list)):
            return ({key: shown(inner) for key, inner in item.items()}
                    if isinstance(item, dict) else [shown(inner) for inner in item])
        return item
    return stable_json(shown(value)).replace('"\\u0000', "").replace('\\u0000"', "")
