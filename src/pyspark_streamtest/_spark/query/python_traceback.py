"""PySpark's own frames left out of the Python tracebacks in Spark's error text.

A failing UDF's traceback reaches the driver as text inside Spark's error. PySpark
already simplifies it for plain UDFs; a ``transformWithState`` processor's or a pandas
function's exception still comes with PySpark's ``worker.py`` and ``serializers.py``
frames above the user's own (issue 36). Each frame (its ``File "...", line N, in f`` line
and the code and ``^^^`` lines under it) whose file is inside PySpark is dropped; the
user's frames, the ``Traceback`` header and the exception lines stay. A traceback that
would keep no frame at all (an error inside PySpark itself) is left whole.
"""

from __future__ import annotations

import re

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_FRAME = re.compile(r'^(?P<indent>[ \t]*)File "(?P<file>[^"]+)", line \d+')
# PySpark's files, from site-packages or from Spark's own pyspark.zip.
_PYSPARK_FILE = re.compile(r"(^|[/\\])pyspark([/\\]|\.zip[/\\]pyspark[/\\])")


def without_pyspark_frames(text: str) -> str:
    """``text`` with the frames of PySpark's own files taken out of its tracebacks."""
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    frames = dropped = 0
    index = 0
    while index < len(lines):
        frame = _FRAME.match(lines[index])
        if frame is None:
            kept.append(lines[index])
            index += 1
            continue
        frames += 1
        start = index
        index += 1
        depth = len(frame.group("indent"))
        while index < len(lines) and _FRAME.match(lines[index]) is None and (
                len(lines[index]) - len(lines[index].lstrip()) > depth):
            index += 1  # the frame's code line and its ^^^ markers
        if _PYSPARK_FILE.search(frame.group("file")):
            dropped += 1
        else:
            kept.extend(lines[start:index])
    if frames and dropped == frames:
        return text
    return "".join(kept)
