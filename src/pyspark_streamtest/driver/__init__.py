"""The TopologyTestDriver: the face, its verbs, and three rooms below them.

``driver.py`` is the face; its verbs beside it (``_lifecycle``, ``_time_control``,
``_state_access`` and ``_state_verbs``, ``_fault_verbs``, ``_upgrade_verbs``,
``_app_verbs``, ``_topic_handles``, ``_frames``). The rooms, from the top down:
``topics/`` (the topic handles a test holds), ``queries/`` (running one output's query
and its history of batches), ``oracle.py`` (the same queries run again by Spark alone,
standing alone) and ``topology/`` (what a topology declares). Each room's
``__init__`` is its door: a module of another room imports the names it lists.
"""

from ..errors import hide_our_frames
from .driver import TopologyTestDriver

__tracebackhide__ = hide_our_frames

__all__ = ["TopologyTestDriver"]
