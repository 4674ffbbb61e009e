"""One stable text for any value: the same value prints the same on every run and machine.

Used where values are compared as text (golden timelines, side-by-side assertions):
datetimes as UTC instants with milliseconds, bytes as UTF-8 text or base64, dict keys
sorted.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any


def utc_text(value: datetime | None) -> str:
    """``2024-01-01T00:00:01.250Z``, or ``-`` for None."""
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def plain(value: Any) -> Any:
    """``value`` with datetimes, bytes and tuples turned into JSON-ready values."""
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return {"utf8": bytes(value).decode("utf-8")}
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def stable_json(value: Any) -> str:
    """Compact JSON of :func:`plain` ``value``, keys sorted."""
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
