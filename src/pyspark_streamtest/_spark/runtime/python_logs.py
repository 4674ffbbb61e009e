"""PySpark's own Python-side error logs, quiet in tests like the JVM's.

PySpark 4 logs every captured JVM error that carries a query context (an ANSI cast
failure, ``CAST_INVALID_INPUT``, names the ``cast`` call of the user's DataFrame) as a
JSON line with the whole JVM stack, about 10 KB, on stderr, each time the error is
converted: a failed batch the driver reports as a
:class:`~pyspark_streamtest.StreamingQueryFailedError`, with the same message and call
site, printed it twice more. With quiet logs (the default) those records are dropped;
a session made with ``jvm_logs=True`` (pytest: ``--streamtest-jvm-logs``) lets them
through, with the JVM's full logs.
"""

from __future__ import annotations

import logging

from ...errors import hide_our_frames
from ..versions import query_context_loggers

__tracebackhide__ = hide_our_frames


class _QueryContextFilter(logging.Filter):
    """Drops every record while quiet."""

    quiet = True

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.quiet


_FILTER = _QueryContextFilter()


def quiet_query_context_logs(quiet: bool | None = None) -> None:
    """Drop (``True``) or show PySpark's query-context error logs, process-wide; with
    None keep the choice made last (quiet unless a test session was made with
    ``jvm_logs=True``). Called when the library makes or finds a test session and when
    a driver starts, not on import: importing the package changes no logging."""
    if quiet is not None:
        _FILTER.quiet = quiet
    for logger in query_context_loggers():
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
