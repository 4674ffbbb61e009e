"""The core: the nouns and exact values every room shares.

Records (:class:`~pyspark_streamtest.TestRecord`, :class:`~pyspark_streamtest.BatchRecord`
and friends), value conversion and equality (the side-by-side diff), exact time, the
test session and the feature probe. Nothing here knows about topologies or queries;
everything above imports it.
"""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames
