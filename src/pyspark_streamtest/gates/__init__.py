"""CI gates: scenario files, the ``pyspark-streamtest`` command, the determinism gate,
the demo and the canned event streams. Built on the public driver only."""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames
