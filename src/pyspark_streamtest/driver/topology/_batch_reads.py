"""``spark.read.format("kafka")`` in a job: a bounded read of the driver's topics, as
Spark's batch Kafka source reads a topic.

What a topic holds is every record piped to it so far (Kafka keeps records whoever has
read them), with the partitions and offsets the driver gave them. ``subscribe``,
``subscribePattern`` and ``assign`` choose topics and partitions; ``startingOffsets``
(``earliest`` by default) and ``endingOffsets`` (``latest`` by default) bound the read,
as ``earliest`` / ``latest`` or JSON per partition (``-2`` earliest, ``-1`` latest;
a partition the JSON leaves out reads from the earliest / to the latest). The columns
are the Kafka source's, with ``headers`` under ``includeHeaders``. Every other format
reads as PySpark reads it.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from ...core.attributes import replaced_attribute
from ...errors import UnsupportedAppCallError, hide_our_frames
from ...kafka.broker import KeptRecord
from ...kafka.serdes import KAFKA_HEADERS_TYPE, KAFKA_SOURCE_SCHEMA

__tracebackhide__ = hide_our_frames

__all__ = ["ChainedOptions", "KafkaTopics", "kafka_batch_reads", "kept_topics_of"]

KafkaTopics = Callable[[], Mapping[str, list[KeptRecord]]]
"""The records of every input topic, as piped so far."""

_EARLIEST, _LATEST = -2, -1
_UNSUPPORTED = ("startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
                "endingoffsetsbytimestamp")


def kept_topics_of(driver: object) -> KafkaTopics:
    """Every record piped to ``driver``'s Kafka inputs so far (its broker's; none before
    its first run, or once it is gone). It holds the driver weakly: the queries keep
    this for a job's ``spark.read``, and a driver nobody closed must still be collected
    (its finalizer stops the queries)."""
    ref = weakref.ref(driver)

    def kept() -> Mapping[str, list[KeptRecord]]:
        alive = ref()
        broker = None if alive is None else getattr(alive, "_broker", None)
        return {} if broker is None else broker.kept

    return kept


@contextmanager
def kafka_batch_reads(session_class: type, topics: KafkaTopics) -> Iterator[None]:
    """While open, ``spark.read`` of every session of ``session_class`` reads
    ``format("kafka")`` from ``topics``."""
    real = session_class.read  # type: ignore[attr-defined]  # the property

    def read(spark: SparkSession) -> _BatchReader:
        return _BatchReader(spark, real.__get__(spark), topics)

    with replaced_attribute(session_class, "read", property(read)):
        yield


_Chained = TypeVar("_Chained", bound="ChainedOptions")


class ChainedOptions:
    """PySpark's reader or writer (``_real``), with the ``format`` and the options
    (keys in lower case, as Spark reads them) its builder verbs were given kept beside
    it: what the driver's readers and writers decide by."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._format: str | None = None
        self._options: dict[str, str] = {}

    def format(self: _Chained, source: str) -> _Chained:
        self._format = str(source)
        self._real = self._real.format(source)
        return self

    def option(self: _Chained, key: str, value: Any) -> _Chained:
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        self._options[str(key).lower()] = text
        self._real = self._real.option(key, value)
        return self

    def options(self: _Chained, **options: Any) -> _Chained:
        for key, value in options.items():
            self.option(key, value)
        return self


class _BatchReader(ChainedOptions):
    """``DataFrameReader`` whose ``format("kafka")`` reads the driver's topics."""

    def __init__(self, spark: SparkSession, real: Any, topics: KafkaTopics) -> None:
        super().__init__(real)
        self._spark = spark
        self._topics = topics

    def load(self, path: str | None = None, format: str | None = None, schema: Any = None,
             **options: Any) -> DataFrame:
        if format is not None:
            self.format(format)
        self.options(**options)
        if (self._format or "").lower() != "kafka":
            return self._real.load(path, format, schema)  # type: ignore[no-any-return]
        return self._kafka()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _kafka(self) -> DataFrame:
        options = self._options
        refused = [o for o in _UNSUPPORTED if o in options]
        if refused:
            raise UnsupportedAppCallError(
                f"spark.read.format('kafka') with {refused[0]}: the driver's topics are "
                "read by offsets (startingOffsets / endingOffsets) only")
        held = self._topics()
        partitions = self._partitions(held)
        start = _bounds(options.get("startingoffsets", "earliest"), "startingOffsets")
        end = _bounds(options.get("endingoffsets", "latest"), "endingOffsets")
        headers = options.get("includeheaders", "false") == "true"
        rows = []
        for topic, records in held.items():
            for kept in records:
                if (topic, kept.partition) not in partitions:
                    continue
                first = start.get((topic, kept.partition), start.get(None, _EARLIEST))
                last = end.get((topic, kept.partition), end.get(None, _LATEST))
                if (first == _EARLIEST or kept.offset >= first) and (
                        last == _LATEST or kept.offset < last):
                    rows.append(kept.row(topic, headers))
        schema = KAFKA_SOURCE_SCHEMA if not headers else StructType(
            [*KAFKA_SOURCE_SCHEMA.fields, StructField("headers", KAFKA_HEADERS_TYPE)])
        return self._spark.createDataFrame(rows, schema)

    def _partitions(self, held: Mapping[str, list[KeptRecord]]) -> set[tuple[str, int]]:
        """The (topic, partition) pairs the read's subscription names."""
        options = self._options
        given = [k for k in ("subscribe", "subscribepattern", "assign") if k in options]
        if len(given) != 1:
            raise UnsupportedAppCallError(
                "spark.read.format('kafka') needs exactly one of the options subscribe, "
                f"subscribePattern, assign (Spark's rule too); the job gave {given or 'none'}")
        known = {(topic, kept.partition) for topic, records in held.items() for kept in records}
        if "assign" in options:
            assigned = json.loads(options["assign"])
            return {(str(t), int(p)) for t, parts in assigned.items() for p in parts}
        if "subscribe" in options:
            names = {t.strip() for t in options["subscribe"].split(",") if t.strip()}
            return {(t, p) for t, p in known if t in names}
        pattern = re.compile(options["subscribepattern"])
        return {(t, p) for t, p in known if pattern.fullmatch(t)}


def _bounds(text: str, option: str) -> dict[Any, int]:
    """``earliest`` / ``latest`` (key None: every partition), or JSON per partition;
    a batch read starts at no ``latest`` and ends at no ``earliest`` (Spark's rule)."""
    word = text.strip().lower()
    refused = _LATEST if option == "startingOffsets" else _EARLIEST
    if word in ("earliest", "latest"):
        bounds: dict[Any, int] = {None: _EARLIEST if word == "earliest" else _LATEST}
    else:
        try:
            given = json.loads(text)
            bounds = {(str(t), int(p)): int(o)
                      for t, parts in given.items() for p, o in parts.items()}
        except (ValueError, AttributeError, TypeError):
            raise UnsupportedAppCallError(
                f"spark.read.format('kafka') with {option}={text!r}: Spark reads earliest, "
                'latest or JSON such as {"topic":{"0":23,"1":-2}}') from None
    if refused in bounds.values():
        raise UnsupportedAppCallError(
            f"spark.read.format('kafka') with {option}={text!r}: Spark refuses "
            f"{'latest' if refused == _LATEST else 'earliest'} there for a batch read")
    return bounds
