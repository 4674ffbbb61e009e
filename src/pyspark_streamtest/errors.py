"""Typed errors. Each message names the problem and the fix.

User errors subclass ``ValueError`` or ``TypeError`` (and :class:`StreamTestError`),
so ``pytest.raises(ValueError)`` works as well as the precise type. After a user
error the driver is unchanged and still usable; after :class:`StreamingQueryFailedError`
or :class:`StepTimeoutError` the driver has closed itself (queries stopped,
checkpoints deleted).
"""

from __future__ import annotations

__all__ = [
    "DriverClosedError",
    "NaiveDatetimeError",
    "NoSuchRecordError",
    "SchemaMismatchError",
    "SparkConnectNotSupportedError",
    "StepTimeoutError",
    "StreamTestError",
    "StreamingQueryFailedError",
    "TimeWentBackwardsError",
    "TopologyError",
    "UnknownTopicError",
    "UnsupportedSchemaError",
    "UnsupportedSparkVersionError",
]


class StreamTestError(Exception):
    """Base class of every error raised by pyspark-streamtest."""


class TopologyError(StreamTestError, ValueError):
    """The topology function declared something the driver cannot run."""


class UnknownTopicError(StreamTestError, ValueError):
    """A topic (input or output) name the topology does not declare."""


class SchemaMismatchError(StreamTestError, TypeError):
    """A piped value does not fit the input's schema (the message names the field)."""


class UnsupportedSchemaError(StreamTestError, TypeError):
    """An input schema uses a type the driver cannot pipe (the message says which)."""


class NaiveDatetimeError(StreamTestError, ValueError):
    """A datetime without a time zone where an instant is needed."""


class TimeWentBackwardsError(StreamTestError, ValueError):
    """Processing time or record time asked to move backwards."""


class DriverClosedError(StreamTestError, RuntimeError):
    """The driver (or a topic handle of it) is used after ``close()``."""


class NoSuchRecordError(StreamTestError, LookupError):
    """A read from an output topic that holds no unread record."""


class SparkConnectNotSupportedError(StreamTestError, TypeError):
    """A Spark Connect session was given; the driver needs a classic session."""


class UnsupportedSparkVersionError(StreamTestError, RuntimeError):
    """This PySpark/Spark version lacks what the driver (or a feature) needs."""


class StreamingQueryFailedError(StreamTestError, RuntimeError):
    """A query failed while running a batch. The driver has closed itself.

    Attributes: ``output`` (the output whose query failed), ``batch_id`` (the batch that
    failed) and ``cause`` (Spark's error text, including the Python traceback of a
    failing UDF).
    """

    def __init__(self, output: str, batch_id: int, cause: str) -> None:
        self.output = output
        self.batch_id = batch_id
        self.cause = cause
        super().__init__(
            f"the query of output {output!r} failed in batch {batch_id}; the driver is now "
            f"closed. Spark's error:\n{cause}"
        )


class StepTimeoutError(StreamTestError, TimeoutError):
    """A query did not finish a trigger within the driver's ``timeout``. The driver closed."""
