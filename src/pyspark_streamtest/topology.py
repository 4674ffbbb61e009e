"""Compatibility path: what this module held lives in :mod:`pyspark_streamtest.driver.topology`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .driver.topology import (
    OutputMode as OutputMode,
)
from .driver.topology import (
    Topology as Topology,
)
from .driver.topology import (
    TopologyFunction as TopologyFunction,
)
from .driver.topology import (
    build_topology as build_topology,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "OutputMode",
    "Topology",
    "TopologyFunction",
]
