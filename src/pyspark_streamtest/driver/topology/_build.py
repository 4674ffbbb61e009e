"""Building a topology: calling the topology function and giving every output's query
its own sources (a memory source serves one query, so an output that shares an input
with an earlier one gets a second call of the function, whose declarations must match
the first's)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

from ..._spark.connect.session import ConnectLink
from ..._spark.jvm import Jvm
from ...core.build_hook import build_hook
from ...errors import TopologyError, hide_our_frames
from ._batch_reads import KafkaTopics
from ._landing import LandingSource, landing_dirs
from ._specs import BuiltOutput, InputSpec
from ._topology import Topology, TopologyFunction

__tracebackhide__ = hide_our_frames

__all__ = ["build_topology"]


def build_topology(
    function: TopologyFunction, spark: SparkSession, jvm: Jvm, link: ConnectLink | None = None,
    kafka_topics: KafkaTopics = dict,
) -> tuple[dict[str, InputSpec], list[BuiltOutput], list[dict[str, Any]]]:
    """Run the topology function and give every output query its own sources
    (``spark`` is the session the user's code sees: with ``link``, a Connect one). A
    file source serves several queries, so one its query shares needs no second call.
    Also returns the Kafka sink rows a ``from_app`` job's ``main()`` wrote (its first
    call's: a second call is the driver's, not the job's). A build that fails deletes
    the landing directories it made if no query holds them."""
    try:
        return _build(function, spark, jvm, link, kafka_topics)
    except BaseException:
        landing = landing_dirs(jvm, make=False)
        if landing is not None:
            landing.release_if_unheld()
        raise


def _build(
    function: TopologyFunction, spark: SparkSession, jvm: Jvm, link: ConnectLink | None,
    kafka_topics: KafkaTopics,
) -> tuple[dict[str, InputSpec], list[BuiltOutput], list[dict[str, Any]]]:
    first = _call(function, spark, jvm, link, kafka_topics)
    if not first._outputs:
        raise TopologyError(
            "the topology function declared no output; call t.output(name, df) at least once"
        )
    signature = _signature(first)
    claimed: set[str] = set()
    built: list[BuiltOutput] = []
    for name in first._outputs:
        output = first._built_output(name)
        reads = {input_name for input_name, source in output.streams
                 if not isinstance(source, LandingSource)}
        if reads & claimed:  # another query already consumes one of these sources
            again = _call(function, spark, jvm, link, kafka_topics)
            if _signature(again) != signature:
                raise TopologyError(
                    "the topology function declared different inputs or outputs when called "
                    "again; it must declare the same ones on every call (it is called once "
                    "per output that shares an input)"
                )
            output = again._built_output(name)
        claimed |= reads
        rebuild = partial(_rebuilt, function, spark, jvm, link, name, kafka_topics)
        built.append(replace(output, rebuild=rebuild))
    return first._inputs, built, first._job_writes.take()


def _rebuilt(function: TopologyFunction, spark: SparkSession, jvm: Jvm,
             link: ConnectLink | None, name: str, kafka_topics: KafkaTopics) -> BuiltOutput:
    return _call(function, spark, jvm, link, kafka_topics)._built_output(name)


def _call(function: TopologyFunction, spark: SparkSession, jvm: Jvm,
          link: ConnectLink | None, kafka_topics: KafkaTopics) -> Topology:
    topology = Topology(spark, jvm, link, kafka_topics)
    hook = build_hook()
    with hook.building(function, spark):
        function(topology)
    hook.built(topology._output_shapes, topology._left_out_outputs)
    return topology


def _signature(t: Topology) -> tuple[object, ...]:
    return (
        tuple(
            (s.name, s.schema.json(), s.timestamp_column, s.kafka, s.partitions, s.key,
             s.files)
            for s in t._inputs.values()
        ),
        tuple(spec for spec, _ in t._outputs.values()),
    )
