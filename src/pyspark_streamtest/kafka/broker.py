"""The broker's part for Kafka-shaped topics: partitions, offsets, record layout.

One :class:`Broker` per driver. Input topics and output topics are separate
namespaces (a test never feeds an output back into an input). Offsets are per
partition, from 0, and survive restarts of the queries (the broker is the driver's).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyspark.sql.types import TimestampType

from ..core.records import TestRecord
from ..core.values import encoder_for
from ..errors import InvalidArgumentTypeError, SchemaMismatchError, hide_our_frames
from .serdes import default_partition

__tracebackhide__ = hide_our_frames

Headers = tuple[tuple[str, bytes | None], ...]

_timestamp_text = encoder_for(TimestampType())


class _TopicLog:
    def __init__(self) -> None:
        self.next_offsets: dict[int, int] = {}
        self.round_robin = 0

    def place(self, key: bytes | None, partitions: int) -> int:
        if key is not None:
            return default_partition(key, partitions)
        chosen = self.round_robin % partitions
        self.round_robin += 1
        return chosen

    def append(self, partition: int) -> int:
        offset = self.next_offsets.get(partition, 0)
        self.next_offsets[partition] = offset + 1
        return offset

    def to_json(self) -> dict[str, Any]:
        return {"next_offsets": {str(p): o for p, o in self.next_offsets.items()},
                "round_robin": self.round_robin}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _TopicLog:
        log = cls()
        log.next_offsets = {int(p): int(o) for p, o in data["next_offsets"].items()}
        log.round_robin = int(data["round_robin"])
        return log


class Broker:
    def __init__(self) -> None:
        self._inputs: dict[str, _TopicLog] = {}
        self._outputs: dict[str, _TopicLog] = {}
        self.kept: dict[str, list[KeptRecord]] = {}
        """Every record piped to an input topic, in order (what a batch read of the
        topic finds: Kafka keeps records whoever has read them). Saved with a
        checkpoint, as bytes."""

    def input_log(self, topic: str) -> _TopicLog:
        return self._inputs.setdefault(topic, _TopicLog())

    def output_log(self, topic: str) -> _TopicLog:
        return self._outputs.setdefault(topic, _TopicLog())

    def to_json(self) -> dict[str, Any]:
        """Every topic's next offsets and every record piped to an input topic (saved
        with a checkpoint: offsets go on, and a batch read of a topic by the next driver
        finds what the topic held)."""
        data: dict[str, Any] = {
            kind: {topic: log.to_json() for topic, log in logs.items()}
            for kind, logs in (("inputs", self._inputs), ("outputs", self._outputs))}
        data["kept"] = {topic: [r.to_json() for r in records]
                        for topic, records in self.kept.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Broker:
        broker = cls()
        for topic, log in data.get("inputs", {}).items():
            broker._inputs[topic] = _TopicLog.from_json(log)
        for topic, log in data.get("outputs", {}).items():
            broker._outputs[topic] = _TopicLog.from_json(log)
        for topic, records in data.get("kept", {}).items():
            broker.kept[topic] = [KeptRecord.from_json(r) for r in records]
        return broker


@dataclass(frozen=True)
class KeptRecord:
    """A record of an input topic as Spark's Kafka source reads it."""

    partition: int
    offset: int
    record: SerializedRecord
    timestamp_type: int

    def row(self, topic: str, include_headers: bool) -> tuple[Any, ...]:
        """The Kafka source's columns (``headers`` last, with ``include_headers``)."""
        record = self.record
        row: tuple[Any, ...] = (record.key_bytes, record.value_bytes, topic, self.partition,
                                self.offset, record.timestamp, self.timestamp_type)
        if include_headers:
            row += ([(k, v) for k, v in record.headers],)
        return row

    def to_json(self) -> dict[str, Any]:
        """The record as a saved checkpoint holds it: bytes in base64, the time as ISO
        text."""
        record = self.record
        return {"partition": self.partition, "offset": self.offset,
                "key": _b64(record.key_bytes), "value": _b64(record.value_bytes),
                "timestamp": record.timestamp.isoformat(),
                "headers": [[k, _b64(v)] for k, v in record.headers],
                "timestamp_type": self.timestamp_type}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeptRecord:
        """The inverse of :meth:`to_json`; the record's deserialized ``key`` and
        ``value`` are not kept (a batch read gives the bytes)."""
        record = SerializedRecord(
            None, None, _unb64(data["key"]), _unb64(data["value"]),
            datetime.fromisoformat(data["timestamp"]),
            tuple((str(k), _unb64(v)) for k, v in data["headers"]), int(data["partition"]))
        return cls(int(data["partition"]), int(data["offset"]), record,
                   int(data["timestamp_type"]))


@dataclass(frozen=True)
class SerializedRecord:
    """A Kafka input record after serialization, before it is given a place."""

    key: Any
    value: Any
    key_bytes: bytes | None
    value_bytes: bytes | None
    timestamp: datetime
    headers: Headers
    partition: int | None


def normalize_headers(headers: object) -> Headers:
    """Headers as Kafka has them: an ordered list of (str key, bytes-or-null value);
    keys may repeat. Accepts a mapping or an iterable of pairs; str values are UTF-8."""
    if headers is None:
        return ()
    if isinstance(headers, Mapping):
        pairs: Iterable[Any] = headers.items()
    elif isinstance(headers, (str, bytes)) or not isinstance(headers, Iterable):
        raise InvalidArgumentTypeError(
            f"headers must be a dict or a list of (key, value) pairs, got {type(headers).__name__}"
        )
    else:
        pairs = headers
    out: list[tuple[str, bytes | None]] = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgumentTypeError(f"each header must be a (key, value) pair, got {pair!r}")
        key, value = pair
        if not isinstance(key, str):
            raise InvalidArgumentTypeError(
                f"header keys must be str, got {type(key).__name__} {key!r}"
            )
        _check_utf8(key, f"header key {key!r}")
        if isinstance(value, str):
            value = _check_utf8(value, f"header {key!r}")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
        elif value is not None:
            raise InvalidArgumentTypeError(
                f"header {key!r}: values must be bytes, str or None, got {type(value).__name__}"
            )
        out.append((key, value))
    return tuple(out)


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def place_input_records(
    broker: Broker,
    topic: str,
    partitions: int,
    timestamp_type: int,
    include_headers: bool,
    records: Sequence[SerializedRecord],
) -> tuple[list[str], list[TestRecord]]:
    """Give each record its partition and offset; return the JSON lines Spark parses
    into the Kafka source's columns, and the records as the test sees them."""
    log = broker.input_log(topic)
    lines: list[str] = []
    placed: list[TestRecord] = []
    for record in records:
        partition = (
            record.partition
            if record.partition is not None
            else log.place(record.key_bytes, partitions)
        )
        offset = log.append(partition)
        broker.kept.setdefault(topic, []).append(
            KeptRecord(partition, offset, record, timestamp_type))
        row: dict[str, Any] = {
            "key": _b64(record.key_bytes),
            "value": _b64(record.value_bytes),
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timestamp": _timestamp_text(record.timestamp, "timestamp"),
            "timestampType": timestamp_type,
        }
        if include_headers:
            row["headers"] = [{"key": k, "value": _b64(v)} for k, v in record.headers]
        lines.append(json.dumps(row, separators=(",", ":")))
        placed.append(TestRecord(
            value=record.value,
            key=record.key,
            timestamp=record.timestamp,
            topic=topic,
            headers=record.headers,
            partition=partition,
            offset=offset,
        ))
    return lines, placed


def _utf8(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def kafka_output_records(
    broker: Broker,
    partitions: int,
    rows: Iterable[Mapping[str, Any]],
    batch_id: int | None,
    processing_time: datetime,
) -> tuple[TestRecord, ...]:
    """The records a batch's rows become in their topics (key and value as bytes);
    ``batch_id`` None for rows no batch wrote (a job's ``main()``)."""
    out: list[TestRecord] = []
    for row in rows:
        topic = str(row["topic"])
        log = broker.output_log(topic)
        key = _utf8(row["key"])
        partition = row.get("partition")
        if partition is None:
            partition = log.place(key, partitions)
        headers = tuple(
            (str(h["key"]), _utf8(h["value"])) for h in (row.get("headers") or ())
        )
        out.append(TestRecord(
            value=_utf8(row["value"]),
            key=key,
            timestamp=processing_time,
            topic=topic,
            batch_id=batch_id,
            processing_time=processing_time,
            headers=headers,
            partition=int(partition),
            offset=log.append(int(partition)),
        ))
    return tuple(out)


def _check_utf8(text: str, where: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (which Kafka could not send and Spark would
    store as '?') is :class:`~pyspark_streamtest.errors.SchemaMismatchError`."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaMismatchError(
            f"{where} holds a lone surrogate ({text!r}), which UTF-8 cannot encode; pass "
            "valid text, or bytes"
        ) from None
