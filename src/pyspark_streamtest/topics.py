"""Compatibility path: what this module held lives in
:mod:`pyspark_streamtest.driver.input_topic`,
:mod:`pyspark_streamtest.driver.output_topic`.

Import from :mod:`pyspark_streamtest` (the package face) in new code."""

from .driver.input_topic import (
    TestInputTopic as TestInputTopic,
)
from .driver.output_topic import (
    TestOutputTopic as TestOutputTopic,
)
from .errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = [
    "TestInputTopic",
    "TestOutputTopic",
]
