"""The query's manual clock (``_spark/query/clock.py``): a JVM object the driver moves and the
stream thread waits on. Here a Python thread plays the stream thread: its Py4J call of
``waitTillTime`` blocks in the JVM as the stream thread's call does."""

from __future__ import annotations

import threading

import pytest

from pyspark_streamtest._spark.jvm import Jvm
from pyspark_streamtest._spark.query.clock import (
    ClockWaitTimeoutError,
    ManualClock,
    QueryInactiveError,
)

_BOUND_S = 30.0  # every wait below is bounded; a healthy clock answers at once


class _StreamThread:
    """Calls ``waitTillTime(target)`` on the clock from a thread of its own."""

    def __init__(self, clock: ManualClock, target: int) -> None:
        self.returned: list[int] = []
        self._thread = threading.Thread(
            target=lambda: self.returned.append(int(clock.java.waitTillTime(target))),
            daemon=True)
        self._thread.start()

    def join(self) -> int:
        self._thread.join(_BOUND_S)
        assert not self._thread.is_alive(), "waitTillTime did not return"
        return self.returned[0]


@pytest.fixture
def clock(spark) -> ManualClock:
    return ManualClock(Jvm(spark), 1_000)


def test_a_new_clock_reads_its_start_and_nobody_waits(clock):
    assert clock.now_ms == 1_000
    assert int(clock.java.getTimeMillis()) == 1_000
    assert int(clock.java.nanoTime()) == 1_000 * 1_000_000
    assert clock.wait_calls == 0
    assert clock.next_trigger_ms is None


def test_moving_to_the_trigger_time_wakes_the_waiting_thread_once(clock):
    waiter = _StreamThread(clock, 2_000)
    clock.await_idle(1, lambda: True, _BOUND_S)
    assert clock.next_trigger_ms == 2_000
    assert clock.advance_to(1_500) is None  # before the trigger: nobody wakes
    assert clock.next_trigger_ms == 2_000
    assert clock.advance_to(2_500) == 1  # woken from its first wait
    assert waiter.join() == 2_500
    assert clock.next_trigger_ms is None
    assert clock.now_ms == 2_500


def test_a_release_runs_one_trigger_without_moving_time(clock):
    waiter = _StreamThread(clock, 2_000)
    clock.await_idle(1, lambda: True, _BOUND_S)
    assert clock.release_once() == 1
    assert waiter.join() == 1_000
    second = _StreamThread(clock, 2_000)  # the next wait is not released again
    clock.await_idle(2, lambda: True, _BOUND_S)
    assert clock.next_trigger_ms == 2_000
    clock.close()
    assert second.join() == 1_000


def _interrupt_waiter(spark) -> None:
    traces = spark._jvm.java.lang.Thread.getAllStackTraces()
    (waiting,) = [thread for thread in traces.keySet().toArray() if any(
        str(frame.getMethodName()) == "waitTillTime" for frame in traces.get(thread))]
    waiting.interrupt()


def test_an_interrupt_does_not_end_the_wait_only_a_move_or_close_does(spark, clock):
    waiter = _StreamThread(clock, 2_000)
    clock.await_idle(1, lambda: True, _BOUND_S)
    _interrupt_waiter(spark)
    assert clock.next_trigger_ms == 2_000  # still waiting for its trigger
    clock.advance_to(2_000)
    assert waiter.join() == 2_000


def test_once_stopping_an_interrupt_ends_the_wait_as_query_stop_needs(spark, clock):
    # query.stop() marks the query inactive, then interrupts its stream thread and joins
    # it: once the driver says it is stopping, that interrupt ends the wait at once (the
    # time is not moved), so stop() returns without the clock being closed.
    waiter = _StreamThread(clock, 2_000)
    clock.await_idle(1, lambda: True, _BOUND_S)
    assert clock.stopping() is True  # parked when told
    assert clock.next_trigger_ms == 2_000  # telling it wakes nobody
    _interrupt_waiter(spark)
    assert waiter.join() == 1_000
    assert clock.now_ms == 1_000


def test_await_idle_times_out_or_names_a_query_that_stopped(clock):
    with pytest.raises(ClockWaitTimeoutError):
        clock.await_idle(1, lambda: True, 0.1)
    with pytest.raises(QueryInactiveError):
        clock.await_idle(1, lambda: False, _BOUND_S)


def test_parked_means_waiting_and_not_released_so_a_stop_knows_no_trigger_can_start(clock):
    # stop_query skips its wait for the run's tasks only when the stream thread is
    # parked. A released thread that has not woken yet still shows its wait target in
    # next_trigger_ms; `parked` is False from the release on, whichever comes first.
    assert not clock.parked  # nobody waits
    waiter = _StreamThread(clock, 2_000)
    clock.await_idle(1, lambda: True, _BOUND_S)
    assert clock.parked
    clock.advance_to(1_500)  # before the trigger: still parked
    assert clock.parked
    clock.release_once()
    assert not clock.parked  # released: awake or about to be
    waiter.join()
    assert not clock.parked
    second = _StreamThread(clock, 2_000)
    clock.await_idle(2, lambda: True, _BOUND_S)
    assert clock.parked
    clock.advance_to(2_000)
    assert not clock.parked
    second.join()
    third = _StreamThread(clock, 3_000)
    clock.await_idle(3, lambda: True, _BOUND_S)
    clock.close()
    assert not clock.parked
    third.join()
