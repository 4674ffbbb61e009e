"""The driver's fault verbs: crash an output's next batch at the point Kafka users reason
about (before the sink is written, or after it is written and before the commit), and
let Spark's own recovery run the batch again."""

from __future__ import annotations

from ..errors import InvalidArgumentError, InvalidArgumentTypeError, hide_our_frames
from .queries import Queries

__tracebackhide__ = hide_our_frames

__all__ = ["FaultVerbs"]


class FaultVerbs:
    """At-least-once against exactly-once, tested on the real recovery path."""

    _queries: Queries

    def _check_open(self) -> None:  # the driver's
        raise NotImplementedError

    def crash_before_commit(self, output: str) -> None:
        """The next batch of ``output`` writes its sink, then fails before Spark writes
        the batch to the commit log, as a driver crash at that moment would.

        The driver then restarts that query from its checkpoint, as Spark's recovery (or
        a restarted job) does, within the same step: Spark runs the *same* batch id again
        with the same offsets. So a ``foreachBatch`` function is called twice with one
        batch id, and a Kafka output gets the batch's records twice (Kafka's sink is
        at-least-once; the topic shows both writes, with their own offsets): a test can
        assert that the function is idempotent on the batch id, or that consumers
        tolerate duplicates. Other outputs show the batch once, as Spark's exactly-once
        sinks (files, tables, memory) do. :attr:`batches` keeps both attempts: the
        crashed one (``crashed="before_commit"``, ``attempt=1``, its ``output_records``
        what stays written: a Kafka or ``foreachBatch`` sink's rows, none for the others)
        and Spark's run of it (``attempt=2``); state checks, late and duplicate records
        count the committed one only.
        """
        self._check_open()
        self._queries.runner(output).arm_crash("before_commit")

    def crash_before_sink(self, output: str) -> None:
        """The next batch of ``output`` fails before its sink is written (for
        ``foreachBatch``, before the function is called); the driver restarts the query
        from its checkpoint within the same step and Spark runs the same batch again,
        which writes once. Every sink then shows the batch exactly once; :attr:`batches`
        keeps the crashed attempt (``crashed="before_sink"``, nothing written) before it."""
        self._check_open()
        self._queries.runner(output).arm_crash("before_sink")

    def crash_after_write(self, output: str, write: int = 1) -> None:
        """The next batch of ``output``, a ``foreachBatch`` output, fails right after the
        ``write``-th ``DataFrame.write`` its function makes (a Kafka write, a file or a
        table: see :meth:`Topology.foreach_batch
        <pyspark_streamtest.Topology.foreach_batch>`), as a crash between two writes
        would: "the batch wrote topic A, then died before topic B". What the writes
        before the crash wrote stays written (a Kafka topic keeps the records; a file or
        table write was made for real). The driver then restarts the query from its
        checkpoint within the same step and Spark runs the same batch id again, so the
        function runs again from its first write. :attr:`batches` keeps both attempts:
        the crashed one (``crashed="after_write_1"`` and so on, ``attempt=1``, its
        ``output_records`` the Kafka records it wrote) and Spark's run (``attempt=2``). A
        batch that makes fewer writes than ``write`` does not crash (the crash waits for
        a batch that does). Writes through a client of the job's own (sqlite3, an HTTP
        call) are not seen: raise from a fake of that client to test those."""
        self._check_open()
        if isinstance(write, bool) or not isinstance(write, int):
            raise InvalidArgumentTypeError(
                f"crash_after_write(write=...) is the number of the write to crash after "
                f"(1 for the first), got {write!r}")
        if write < 1:
            raise InvalidArgumentError(
                f"crash_after_write(write={write}): writes are counted from 1")
        runner = self._queries.runner(output)
        writes = runner.built.spec.writes
        if writes is None:
            raise InvalidArgumentError(
                f"output {output!r} has no foreachBatch function, so nothing writes inside "
                "its batches; crash_before_commit and crash_before_sink crash any output")
        writes.crash_after = write
        runner.arm_crash(f"after_write_{write}")
