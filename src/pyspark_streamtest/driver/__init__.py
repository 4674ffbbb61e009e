"""The TopologyTestDriver and the one-job collaborators it delegates to.

``driver.py`` is the face. Beside it: ``topology.py`` (what a topology declares),
``input_topic.py`` and ``output_topic.py`` (the topic handles), ``_runner.py`` (one
output's query), ``_queries.py`` (starting, restarting and stopping them all),
``_time_control.py`` (moving processing time and watermarks), ``_history.py`` (the
per-batch record and the output queues) and ``_state_access.py`` (state stores, late
records, state-row checks).
"""

from ..errors import hide_our_frames
from .driver import TopologyTestDriver

__tracebackhide__ = hide_our_frames

__all__ = ["TopologyTestDriver"]
