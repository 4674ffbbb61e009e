"""Spark Declarative Pipelines as streams: a pipeline run update by update by Spark's
own engine in the test's JVM (:class:`PipelineTestDriver`), what each update did
(:class:`PipelineUpdate`, :class:`FlowRun`, :class:`FlowBatch`), what the tables hold
(:class:`PipelineOutputTopic`) and the graph (:class:`PipelineGraph`, with its
:class:`Hazard` s). Beside the driver: it runs pipelines, not topologies, and reads
state with the state room's views."""

from ..errors import hide_our_frames
from ._driver import PipelineTestDriver
from ._graph import DatasetInfo, FlowInfo, Hazard, PipelineGraph
from ._topics import PipelineOutputTopic
from ._updates import FlowBatch, FlowRun, PipelineUpdate

__tracebackhide__ = hide_our_frames

__all__ = [
    "DatasetInfo",
    "FlowBatch",
    "FlowInfo",
    "FlowRun",
    "Hazard",
    "PipelineGraph",
    "PipelineOutputTopic",
    "PipelineTestDriver",
    "PipelineUpdate",
]
