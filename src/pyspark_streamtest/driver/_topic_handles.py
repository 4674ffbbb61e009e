"""Making topic handles: which names exist, which serdes apply, and the links that
tie each handle to its driver."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from ..core.time import require_aware
from ..errors import InvalidArgumentTypeError, UnknownTopicError, hide_our_frames
from ..kafka.serdes import DeserializerSpec, SerializerSpec, deserializer, serializer
from .queries import History, names_text
from .topics import InputLink, OutputLink, TestInputTopic, TestOutputTopic
from .topology import BuiltOutput, InputSpec

__tracebackhide__ = hide_our_frames

__all__ = ["TopicHandles"]


class TopicHandles:
    """Creates the input and output handles of one driver, checking names and serdes."""

    def __init__(
        self,
        inputs: Mapping[str, InputSpec],
        outputs: Mapping[str, BuiltOutput],
        history: History,
        input_link: InputLink,
        output_link: OutputLink,
        readers: dict[str, tuple[DeserializerSpec, DeserializerSpec]],
    ) -> None:
        self._inputs = inputs
        self._outputs = outputs
        self._history = history
        self._input_link = input_link
        self._output_link = output_link
        self._readers = readers
        """Topic -> the deserializers its latest handle was given (the failure report's
        timeline decodes the topic's records with them); kept across runs."""

    def input_topic(
        self,
        name: str,
        key_serializer: SerializerSpec | None,
        value_serializer: SerializerSpec | None,
        start: datetime,
        auto_advance: timedelta | None,
    ) -> TestInputTopic:
        spec = self._inputs.get(name)
        if spec is None:
            raise UnknownTopicError(
                f"unknown input {name!r}; this topology's inputs are {names_text(self._inputs)}"
            )
        if spec.left_out is not None:
            raise UnknownTopicError(spec.left_out)
        kafka = spec.kafka is not None
        if not kafka and (key_serializer is not None or value_serializer is not None):
            raise InvalidArgumentTypeError(
                f"input {name!r} is not a Kafka input; serializers apply to inputs declared "
                "with t.kafka_input(...) (plain inputs take values that match their schema)"
            )
        return TestInputTopic._create(
            self._input_link,
            spec,
            require_aware(start, "start_timestamp"),
            timedelta(0) if auto_advance is None else auto_advance,
            serializer(key_serializer or "auto") if kafka else None,
            serializer(value_serializer or "auto") if kafka else None,
        )

    def output_topic(
        self,
        name: str,
        key_deserializer: DeserializerSpec,
        value_deserializer: DeserializerSpec,
    ) -> TestOutputTopic:
        plain = self._outputs.get(name) if isinstance(name, str) else None
        if plain is not None and plain.spec.kafka is None:
            if key_deserializer is not None or value_deserializer is not None:
                raise InvalidArgumentTypeError(
                    f"output {name!r} is not a Kafka output; its records are rows (dicts), "
                    "so there is nothing to deserialize"
                )
            return TestOutputTopic._create(self._output_link, name, kafka=False,
                                           complete=plain.spec.output_mode == "complete")
        if not isinstance(name, str) or not name:
            raise UnknownTopicError(f"topic names are non-empty strings, got {name!r}")
        if not self._may_write(name):
            raise UnknownTopicError(
                f"unknown output {name!r}; this topology's outputs are "
                f"{names_text(self._outputs)}"
                + (f" and its Kafka outputs write {names_text(self._fixed_topics())}"
                   if self._kafka_outputs() else "")
            )
        writers = tuple(
            b.spec.name for b in self._kafka_outputs()
            if b.spec.kafka is not None
            and (b.spec.kafka.routes_by_column or (b.spec.kafka.topic or b.spec.name) == name)
        )
        if key_deserializer is not None or value_deserializer is not None:
            self._readers[name] = (key_deserializer, value_deserializer)
        return TestOutputTopic._create(
            self._output_link, name, kafka=True, queries=writers,
            key_deserializer=deserializer(key_deserializer),
            value_deserializer=deserializer(value_deserializer),
        )

    def _kafka_outputs(self) -> list[BuiltOutput]:
        return [b for b in self._outputs.values() if b.spec.kafka is not None]

    def _fixed_topics(self) -> list[str]:
        """Topics written by Kafka outputs that do not route by a ``topic`` column."""
        return [
            b.spec.kafka.topic or b.spec.name
            for b in self._kafka_outputs()
            if b.spec.kafka is not None and not b.spec.kafka.routes_by_column
        ]

    def _may_write(self, topic: str) -> bool:
        return (
            self._history.queue(topic) is not None
            # a foreachBatch function may write any topic with DataFrame.write
            or any(b.spec.foreach_batch is not None for b in self._outputs.values())
            or topic in self._fixed_topics()
            or any(b.spec.kafka is not None and b.spec.kafka.routes_by_column
                   for b in self._kafka_outputs())
        )

