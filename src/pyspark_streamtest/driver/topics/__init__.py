"""The topic handles a test holds: :class:`TestInputTopic` and :class:`TestOutputTopic`
and the encoding of what is piped. Imports the queries and topology rooms."""

from ...errors import hide_our_frames
from .input_topic import InputLink, TestInputTopic
from .output_topic import OutputLink, TestOutputTopic

__tracebackhide__ = hide_our_frames

__all__ = [
    "InputLink",
    "OutputLink",
    "TestInputTopic",
    "TestOutputTopic",
]
