"""Reporting: what happened, shown to people. Timeline tables, pictures and golden
timelines. It only formats: equality and conversion live in the core."""

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames
