"""Declaring a topology: :class:`Topology`, its inputs' and outputs' specs, the
landing folders of file inputs and the batch Kafka reads and writes a job's code makes.
The driver's lowest room: it imports nothing of the driver's."""

from ...errors import hide_our_frames
from ._batch_reads import kept_topics_of
from ._build import build_topology
from ._landing import LandedInputs, LandingDir, LandingSource, landing_dirs, temp_root
from ._specs import Source
from ._topology import BatchFunction, BuiltOutput, InputSpec, OutputMode, Topology, TopologyFunction

__tracebackhide__ = hide_our_frames

__all__ = [
    "BatchFunction",
    "BuiltOutput",
    "InputSpec",
    "LandedInputs",
    "LandingDir",
    "LandingSource",
    "OutputMode",
    "Source",
    "Topology",
    "TopologyFunction",
    "build_topology",
    "kept_topics_of",
    "landing_dirs",
    "temp_root",
]
