"""One streaming query's internals, through Py4J: its manual clock, memory streams and
sink, starting and stopping it, its plan, watermark, state and late rows, its checkpoint
and offset logs, the callback connections its stream thread uses, and Spark's refusals
of an incompatible checkpoint. Uses only the base (:mod:`..jvm`, :mod:`..versions`)."""

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames
