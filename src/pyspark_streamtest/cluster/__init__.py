"""A Spark standalone cluster for the test suite: ``pyspark-streamtest cluster start``
starts Spark's own Master and Workers on 127.0.0.1 from the installed PySpark;
``--streamtest-master spark://127.0.0.1:PORT`` (or ``STREAMTEST_MASTER``) runs the
tests' session on it; ``cluster stop`` stops exactly what ``start`` started."""

from ..errors import hide_our_frames
from ._standalone import Cluster, cluster_status, default_state_dir, start_cluster, stop_cluster

__tracebackhide__ = hide_our_frames

__all__ = ["Cluster", "cluster_status", "default_state_dir", "start_cluster", "stop_cluster"]
