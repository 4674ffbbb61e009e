"""Golden timelines: pin a test's whole batch history in a file and see what a change alters.

A *timeline* is the driver's :attr:`~pyspark_streamtest.TopologyTestDriver.batches` as
text, one block per batch: output, batch id, processing time, the watermark during and
after the batch, the records it read (with their event times, and Kafka keys, partitions
and offsets), the rows it emitted, rows dropped as late and state rows. Everything in it
comes from the test's own clock and data, so it is the same on every run and machine: no
paths, run ids or wall-clock times. Rows a batch emitted are listed sorted (Spark does not
order rows across partitions within a batch); records read keep the order piped.

Under pytest, use the ``streamtest_golden`` fixture
(``streamtest_golden(driver, "name")``): the file is ``golden/<name>.timeline`` next to
the test module; ``--streamtest-update-golden`` writes the files instead of comparing.
Outside pytest, :func:`assert_matches_golden` takes the path.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import Any

from ..core.records import BatchRecord, TestRecord
from ..core.stable import stable_json, utc_text
from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

__all__ = ["GoldenMismatchError", "assert_matches_golden", "format_golden_timeline"]


class GoldenMismatchError(AssertionError):
    """The batch history differs from the golden file (the message says where and how)."""


def _record_line(record: TestRecord, kind: str) -> str:
    parts = [kind]
    if kind == "in" or record.partition is not None:  # Kafka outputs name their topic
        parts.append(record.topic)
    if record.key is not None:
        parts.append(f"key={stable_json(record.key)}")
    parts.append(stable_json(record.value))
    if kind == "in" and record.timestamp is not None:
        parts.append(f"@{utc_text(record.timestamp)}")
    if record.partition is not None:
        parts.append(f"p{record.partition}/o{record.offset}")
    if record.headers:
        parts.append(f"headers={stable_json([[k, v] for k, v in record.headers])}")
    return "  " + " ".join(parts)


def _batch_block(batch: BatchRecord) -> list[str]:
    lines = [
        f"batch {batch.batch_id} of {batch.output} at {utc_text(batch.processing_time)}"
        f"{attempt_text(batch)}: "
        f"watermark {utc_text(batch.watermark)} -> {utc_text(batch.watermark_after)}, "
        f"{batch.num_input_rows} in, {len(batch.output_records)} out, "
        f"{batch.num_rows_dropped_by_watermark} dropped late, "
        f"{batch.num_state_rows_total} state rows"
    ]
    lines.extend(_record_line(r, "in") for r in batch.input_records)
    lines.extend(sorted(_record_line(r, "out") for r in batch.output_records))
    return lines


def format_golden_timeline(batches: Sequence[BatchRecord]) -> str:
    """The stable text of a batch history (see the module doc)."""
    lines = ["# pyspark-streamtest golden timeline (rewrite with --streamtest-update-golden)"]
    for batch in batches:
        lines.extend(_batch_block(batch))
    return "\n".join(lines) + "\n"


def _blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("batch "):
            blocks.append([line])
        elif blocks and line.startswith("  "):
            blocks[-1].append(line)
    return blocks


def describe_difference(expected: str, actual: str) -> str:
    """Which batch changed first and how, then the full diff."""
    old, new = _blocks(expected), _blocks(actual)
    summary = []
    for index in range(max(len(old), len(new))):
        if index >= len(old):
            summary.append(f"{len(new) - len(old)} batch(es) more than the golden file, from: "
                           f"{new[index][0]}")
            break
        if index >= len(new):
            summary.append(f"{len(old) - len(new)} batch(es) fewer than the golden file; the "
                           f"first missing: {old[index][0]}")
            break
        if old[index] != new[index]:
            summary.append(f"first difference in the batch #{index + 1} of the history:")
            summary.extend(
                line for line in difflib.unified_diff(
                    old[index], new[index], "golden", "this run", lineterm="", n=20)
                if not line.startswith(("---", "+++"))
            )
            break
    diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                     "golden", "this run", lineterm="", n=1))
    return "\n".join([*summary, "", "full diff:", *diff])


def assert_matches_golden(
    batches_or_driver: Any, path: str | os.PathLike[str], *, update: bool = False
) -> None:
    """Compare a batch history (or a driver's ``batches``) with the golden file ``path``.

    With ``update=True`` the file is (re)written instead. A missing file is an error
    (a CI run must never pass by creating its own expectation): create it with
    ``update=True`` (``--streamtest-update-golden`` under pytest) and commit it.
    Raises :class:`GoldenMismatchError` naming the first batch that differs.
    """
    batches = getattr(batches_or_driver, "batches", batches_or_driver)
    actual = format_golden_timeline(tuple(batches))
    target = os.fspath(path)
    if update:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as out:
            out.write(actual)
        return
    if not os.path.exists(target):
        raise GoldenMismatchError(
            f"no golden file {target}; run once with --streamtest-update-golden (or "
            "update=True) to write it, check it, and commit it"
        )
    with open(target, encoding="utf-8") as source:
        expected = source.read()
    if expected != actual:
        raise GoldenMismatchError(
            f"the batch history differs from {os.path.basename(target)} "
            f"(--streamtest-update-golden rewrites it):\n{describe_difference(expected, actual)}"
        )


def attempt_text(batch: BatchRecord) -> str:
    """How a timeline marks an attempt of a batch the test crashed, and the run that
    followed it: `` (attempt 1, crashed before commit)``, `` (attempt 2)``; nothing for a
    batch run once."""
    if batch.crashed is not None:
        return f" (attempt {batch.attempt}, crashed {batch.crashed.replace('_', ' ')})"
    return f" (attempt {batch.attempt})" if batch.attempt > 1 else ""
