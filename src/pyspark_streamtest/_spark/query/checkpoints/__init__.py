"""A query's checkpoint: the settings that make its writes cheap on a local file system
(``settings``), its offset and commit logs read back (``offset_log``), and Spark's
refusals to run a query from a checkpoint that does not fit it (``incompatible``)."""

from ....errors import hide_our_frames

__tracebackhide__ = hide_our_frames
