"""The processes Spark runs in: the test session and its defaults, warm JVMs and their
keeper, the Python worker server and launcher, liveness of the JVM, the JVM's logs,
Py4J's converters, Spark's home and the failures of this machinery (not of a batch).

Above :mod:`..connect` (a session may be a Spark Connect one) and :mod:`..query`
(a warm JVM numbers the callback proxies of its runs); knows nothing of one query's
internals beyond that.
"""

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames
