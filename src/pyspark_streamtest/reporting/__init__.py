"""Reporting: what happened, shown to people. Timeline tables, pictures and golden
timelines. It only formats: equality and conversion live in the core."""
