"""Spark's refusals to run a query from a checkpoint whose state or sources do not fit
it, told apart from other batch failures by their error classes and texts:

- 4.0+: ``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``,
  ``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE`` (the state schema check, while the first
  batch after a start is planned) and
  ``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`` (another stateful
  operator than the state metadata records);
- 3.5: ``StateSchemaNotCompatible`` ("Provided schema doesn't match to the schema for
  existing state"), raised in the first task that opens the operator's state store;
- every line: "There are [N] sources in the checkpoint offsets and now there are [M]
  sources requested by the query" when the number of sources changed.
"""

from __future__ import annotations

import re

from ....errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["incompatibility"]

_CHANGES = (
    ("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
     "the state's key schema changed (other grouping keys, join keys or key types)"),
    ("STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
     "the state's value schema changed (other aggregates, or other types)"),
    ("STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
     "a stateful operator was added, removed or changed"),
    ("Provided schema doesn't match to the schema for existing state",
     "the state's key or value schema changed"),
    ("StateSchemaNotCompatible", "the state's key or value schema changed"),
    ("sources in the checkpoint offsets and now there are",
     "the number of sources changed"),
    ("Wrong basePath",
     "a file source's directory changed (the checkpoint's file log names the files it "
     "read by their paths, outside the new directory)"),
)

_OPERATOR = re.compile(r"(?:operatorId|OperatorId|operator id)[=: ]+(\d+)", re.IGNORECASE)
_OPERATOR_NAME = re.compile(r"OperatorName: (\w+)")
# STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA lists both sides.
_OPERATOR_LISTS = re.compile(
    r"in the metadata: \[(.*?)\]; Stateful operators in current batch: \[(.*?)\]", re.DOTALL)


def _operators_compared(old: list[str], new: list[str]) -> str:
    """What the new version did to the checkpoint's stateful operators, in words."""
    removed = [name for name in old if name not in new]
    added = [name for name in new if name not in old]
    said = [f"removed {', '.join(removed)}" if removed else "",
            f"added {', '.join(added)}" if added else ""]
    change = "; ".join(part for part in said if part) or "reordered or changed"
    return (f"the checkpoint's stateful operators are {', '.join(old) or 'none'}, the new "
            f"version's {', '.join(new) or 'none'}: {change}")


def incompatibility(text: str) -> tuple[str, str | None] | None:
    """(what changed, the operator Spark names or None) if ``text`` is one of Spark's
    checkpoint refusals; None for any other failure."""
    for marker, change in _CHANGES:
        if marker in text:
            return change, _operator(text)
    return None


def _operator(text: str) -> str | None:
    lists = _OPERATOR_LISTS.search(text)
    if lists is not None:
        return _operators_compared(_OPERATOR_NAME.findall(lists.group(1)),
                                   _OPERATOR_NAME.findall(lists.group(2)))
    names = _OPERATOR_NAME.findall(text)
    if names:
        return "stateful operators: " + ", ".join(dict.fromkeys(names))
    found = _OPERATOR.search(text)
    return None if found is None else f"stateful operator {found.group(1)}"
