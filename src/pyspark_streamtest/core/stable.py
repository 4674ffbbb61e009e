"""One stable text for any value: the same value prints the same on every run and machine.

Used where values are compared as text (golden timelines, side-by-side assertions):
datetimes as UTC instants with milliseconds, strings that are ISO 8601 instants with a
zone (any fraction, any offset form: ``...T00:10:00Z``, ``...T01:10:00.000+01:00``,
``...+0100``) as the same UTC instant text, bytes as UTF-8 text or base64, dict keys
sorted. So an output that writes a timestamp as JSON text compares equal to the same
instant written any other way.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_INSTANT = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<h>\d\d):(?P<m>\d\d)(?::(?P<s>\d\d)(?:[.,](?P<f>\d+))?)?"
    r"(?:(?P<z>Z)|(?P<sign>[+-])(?P<oh>\d\d)(?::?(?P<om>\d\d))?)"
)


def parse_instant(text: str) -> datetime | None:
    """The aware UTC datetime an ISO 8601 instant with a zone names (to the microsecond),
    or None when ``text`` is not one."""
    match = _INSTANT.fullmatch(text)
    if match is None:
        return None
    fraction = (match["f"] or "0")[:6].ljust(6, "0")
    try:
        local = datetime.fromisoformat(f"{match['date']}T{match['h']}:{match['m']}:"
                                       f"{match['s'] or '00'}.{fraction}")
    except ValueError:
        return None
    offset = timedelta(0)
    if match["sign"]:
        offset = timedelta(hours=int(match["oh"]), minutes=int(match["om"] or 0))
        offset = -offset if match["sign"] == "-" else offset
    try:
        return (local - offset).replace(tzinfo=timezone.utc)
    except OverflowError:
        return None


def utc_text(value: datetime | None) -> str:
    """``2024-01-01T00:00:01.250Z``, or ``-`` for None."""
    if value is None:
        return "-"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def plain(value: Any) -> Any:
    """``value`` with datetimes, bytes and tuples turned into JSON-ready values."""
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, str):
        instant = parse_instant(value) if len(value) >= 16 and value[4:5] == "-" else None
        return value if instant is None else utc_text(instant)
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
