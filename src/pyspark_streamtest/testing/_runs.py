"""Property tests that shrink in Spark's time: hypothesis settings that suit a test
running real queries, and a runner that answers a schedule it has already run from a
cache instead of running Spark again.

Why both matter: hypothesis shrinks a failure by running the test on many smaller
candidates, most of which pass. With Spark in the loop each candidate costs the batches
it runs (about a second for a few batches on 2 cores), so what decides the time to a
minimal example is how many candidates reach Spark. Two things cut that number without
changing what any run answers:

* different draws often build the *same* schedule (a share of 0.2 is drawn as one of a
  thousand numbers, most of which mean "no"; lowering one of them is a new candidate
  for hypothesis and the same schedule for Spark). A query's batches are a function of
  the driver calls a schedule makes (the determinism gate checks it), so a schedule run
  once need not run again;
* hypothesis' *explain* phase (after shrinking, it re-runs the minimal example with
  each part varied, to say which parts matter) and the shrinking of a second, distinct
  failure each cost as many Spark runs as a shrink. :func:`spark_settings` leaves both
  out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

from ..core import _open_drivers
from ..core.records import BatchRecord, TestRecord
from ..driver import TopologyTestDriver
from ..errors import hide_our_frames
from .schedule import AdvanceWatermark, Drain, Event, Pipe, Restart, Schedule, Tick

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__tracebackhide__ = hide_our_frames

__all__ = ["clear_run_cache", "run_schedule", "run_topology", "spark_settings"]

_CACHE_SIZE = 256
"""Schedules remembered: a shrink of a few minutes tries a few hundred candidates."""

_runs: OrderedDict[Hashable, tuple[BatchRecord, ...]] = OrderedDict()
_DRIVERS_KEPT = 4
"""Drivers kept for reuse, one per topology and driver options (a test uses one or two)."""
_drivers: OrderedDict[Hashable, TopologyTestDriver] = OrderedDict()
_played = 0


def spark_settings(**changes: Any) -> settings:
    """hypothesis ``settings`` for property tests that run Spark queries; use it as the
    decorator, or as ``parent=`` of your own, or register it as a profile.

    The values, and why (any of them can be changed by a keyword argument of the same
    name, as hypothesis' ``settings(...)`` takes it):

    * ``deadline=None``: a batch takes 100-300 ms and varies with load, so hypothesis'
      200 ms deadline would fail healthy examples;
    * ``suppress_health_check=[HealthCheck.too_slow]``: a test that runs batches is slow
      by hypothesis' measure, and meant to be;
    * ``phases`` without ``Phase.explain``: the explain phase re-runs the minimal example
      many times to mark which of its parts matter; with Spark that costs as much as the
      shrink itself, and the minimal schedule already shows what matters;
    * ``report_multiple_bugs=False``: hypothesis stops at the first failure it has shrunk
      instead of shrinking every distinct failure it met (each a shrink's worth of Spark
      runs); fix it and run again;
    * ``max_examples=25``: each example starts queries and runs batches; raise it for a
      nightly run.

    ``database`` and ``derandomize`` stay hypothesis' defaults (the local example
    database replays the last failure first); a CI profile would set
    ``derandomize=True, database=None``.
    """
    values: dict[str, Any] = {
        "deadline": None,
        "suppress_health_check": [HealthCheck.too_slow],
        "phases": tuple(p for p in Phase if p is not Phase.explain),
        "report_multiple_bugs": False,
        "max_examples": 25,
    }
    values.update(changes)
    return settings(**values)


def run_topology(
    topology: Callable[..., None],
    schedule: Schedule,
    *,
    spark: SparkSession | None = None,
    input: str = "events",
    output: str = "out",
    trigger_interval: timedelta = timedelta(seconds=1),
    driver_options: Mapping[str, Any] | None = None,
    cache: bool = True,
) -> tuple[BatchRecord, ...]:
    """Run ``schedule`` through a fresh driver of ``topology`` and return the batches of
    ``output``, as :func:`~pyspark_streamtest.testing.strategies.run_schedule` does
    with ``TopologyTestDriver(topology, spark=spark, trigger_interval=trigger_interval,
    **driver_options)`` (closed before returning).

    With ``cache=True`` (the default) the batches of the last 256 runs are kept, keyed by
    the topology function, the schedule and every other argument, and a run asked for
    again is answered from there without running Spark. The answer is the one Spark
    gave: a query's batches depend only on the driver calls the schedule makes. Turn the
    cache off when the test also checks what a run does outside its batches (a
    ``foreach_batch`` function's side effects, files written), or when ``topology``
    reads something that changes between examples. Runs that raise are not kept.
    ``driver_options`` whose values cannot be hashed (beyond mappings, which are frozen
    for the key) turn the cache off for that call.

    Every ``schedule`` starts at the driver's ``start_time`` with no state, as each
    hypothesis example must: on a new driver, or on the driver an earlier call made for
    the same topology and options, after :meth:`~pyspark_streamtest.TopologyTestDriver.reset`
    (which gives the same batches as a new driver, without building the topology's
    DataFrames again). With ``cache=False``, ``freeze_python_clock=True`` (a kept driver
    would keep Python's clock frozen between examples) or options that cannot be hashed,
    each run gets a new driver, closed before returning; kept drivers are closed by
    :func:`clear_run_cache`.
    """
    if not isinstance(schedule, Schedule):
        raise InvalidArgument(f"schedule={schedule!r} must be a Schedule")
    if not isinstance(trigger_interval, timedelta):
        raise InvalidArgument(f"trigger_interval={trigger_interval!r} must be a timedelta")
    options = dict(driver_options or {})
    key = _key(topology, schedule, spark, input, output, trigger_interval, options) \
        if cache else None
    if key is not None and key in _runs:
        _runs.move_to_end(key)
        return _runs[key]
    global _played
    _played += 1
    # A kept driver with a frozen Python clock would keep it frozen between examples.
    reuse = cache and not options.get("freeze_python_clock", False)
    kept = _driver_key(topology, spark, trigger_interval, options) if reuse else None
    driver = _driver_for(kept, topology, spark, trigger_interval, options)
    try:
        batches = run_schedule(driver, schedule, input=input, output=output,
                               trigger_interval=trigger_interval)
    except BaseException:
        _drivers.pop(kept, None)  # a failed run may leave a driver stopped or closed
        driver.close()
        raise
    if kept is None:
        driver.close()
    if key is not None:
        _runs[key] = batches
        while len(_runs) > _CACHE_SIZE:
            _runs.popitem(last=False)
    return batches


def clear_run_cache() -> None:
    """Forget every run :func:`run_topology` kept and close the drivers it keeps for
    reuse (the pytest plugin does it after each test, so nothing carries over between
    tests)."""
    _runs.clear()
    while _drivers:
        _drivers.popitem()[1].close()


def _driver_for(key: Hashable | None, topology: Callable[..., None],
                spark: SparkSession | None, interval: timedelta,
                options: dict[str, Any]) -> TopologyTestDriver:
    """A driver for one run: the one kept for ``key``, reset (the topology's DataFrames
    are built once), or a new one, kept when ``key`` is not None."""
    driver = _drivers.get(key) if key is not None else None
    if driver is not None and not driver.closed:
        _drivers.move_to_end(key)
        driver.reset()
        return driver
    if key is None:
        return TopologyTestDriver(topology, spark=spark, trigger_interval=interval, **options)
    with _open_drivers.shared():  # kept across examples: clear_run_cache closes it
        driver = TopologyTestDriver(topology, spark=spark, trigger_interval=interval,
                                    **options)
    _drivers[key] = driver
    while len(_drivers) > _DRIVERS_KEPT:
        _drivers.popitem(last=False)[1].close()
    return driver


def _driver_key(topology: Callable[..., None], spark: SparkSession | None,
                interval: timedelta, options: dict[str, Any]) -> Hashable | None:
    frozen = tuple(sorted((name, _frozen(value)) for name, value in options.items()))
    key = (topology, spark, interval, frozen)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def spark_runs() -> int:
    """How many schedules :func:`run_topology` has played on a driver in this process
    (the ones its cache answered are not counted)."""
    return _played


def _key(topology: Callable[..., None], schedule: Schedule, spark: SparkSession | None,
         input: str, output: str, interval: timedelta,
         options: dict[str, Any]) -> Hashable | None:
    driver_key = _driver_key(topology, spark, interval, options)
    return None if driver_key is None else (driver_key, schedule, input, output)


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def run_schedule(
    driver: Any,
    schedule: Schedule,
    *,
    input: str = "events",
    output: str = "out",
    trigger_interval: timedelta = timedelta(seconds=1),
) -> tuple[BatchRecord, ...]:
    """Run ``schedule`` through ``driver`` and return the batches of ``output``.

    ``Pipe`` pipes the events into ``input`` in one call: as rows ``{"key", "value"}``
    with event time ``timestamp`` (plain inputs, whose timestamp column is filled), or
    as string key and value with that Kafka timestamp (Kafka inputs; a None value is a
    tombstone). ``Tick`` advances the wall clock by ``trigger_interval`` (the driver's),
    ``Drain`` is :meth:`~pyspark_streamtest.TopologyTestDriver.process_all_available`,
    ``Restart`` is :meth:`~pyspark_streamtest.TopologyTestDriver.restart`, and
    ``AdvanceWatermark(to)`` calls ``advance_watermark_to(to, output=output)`` when
    ``to`` is above the output's watermark, else only drains.
    """
    handle = driver.create_input_topic(input)
    if handle.is_kafka:
        handle = driver.create_input_topic(input, key_serializer="string",
                                           value_serializer="string")
    for step in schedule.steps:
        if isinstance(step, Pipe):
            handle.pipe_record_list(_records(step.events, kafka=handle.is_kafka))
        elif isinstance(step, Tick):
            driver.advance_wall_clock(trigger_interval)
        elif isinstance(step, Drain):
            driver.process_all_available()
        elif isinstance(step, Restart):
            driver.restart()
        elif isinstance(step, AdvanceWatermark):
            current = driver.watermark(output)
            if current is not None and step.to > current:
                driver.advance_watermark_to(step.to, output=output)
            else:
                driver.process_all_available()
        else:  # pragma: no cover
            raise TypeError(f"unknown step {step!r}")
    return tuple(b for b in driver.batches if b.output == output)


def _records(piped: Sequence[Event], *, kafka: bool) -> list[TestRecord]:
    if kafka:
        return [TestRecord(key=e.key, value=e.value, timestamp=e.timestamp) for e in piped]
    return [TestRecord(value={"key": e.key, "value": e.value}, timestamp=e.timestamp)
            for e in piped]
