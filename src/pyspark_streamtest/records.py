"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.core.records`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .core.records import (
    BatchRecord as BatchRecord,
)
from .core.records import (
    KeyValue as KeyValue,
)
from .core.records import (
    LateRecord as LateRecord,
)
from .core.records import (
    StateOperatorMetrics as StateOperatorMetrics,
)
from .core.records import (
    TestRecord as TestRecord,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
]
