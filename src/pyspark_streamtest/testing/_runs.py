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
from collections.abc import Callable, Hashable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

from ..core import open_drivers as _open_drivers
from ..core.records import BatchRecord
from ..driver import TopologyTestDriver
from ..errors import hide_our_frames
from ._play import RecordFunction, SerializerChoice, run_schedule
from .schedule import Schedule

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__tracebackhide__ = hide_our_frames

__all__ = ["clear_run_cache", "run_app", "run_schedule", "run_topology", "spark_settings"]

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
    input: str | None = "events",
    output: str = "out",
    trigger_interval: timedelta = timedelta(seconds=1),
    driver_options: Mapping[str, Any] | None = None,
    to_record: RecordFunction | Mapping[str, RecordFunction] | None = None,
    key_serializer: SerializerChoice = None,
    value_serializer: SerializerChoice = None,
    cache: bool = True,
) -> tuple[BatchRecord, ...]:
    """Run ``schedule`` through a fresh driver of ``topology`` and return the batches of
    ``output``, as :func:`~pyspark_streamtest.testing.strategies.run_schedule` does
    with ``TopologyTestDriver(topology, spark=spark, trigger_interval=trigger_interval,
    **driver_options)`` (closed before returning). ``input``, ``to_record``,
    ``key_serializer`` and ``value_serializer`` are ``run_schedule``'s.

    With ``cache=True`` (the default) the batches of the last 256 runs are kept, keyed by
    the topology function, the schedule and every other argument, and a run asked for
    again is answered from there without running Spark. The answer is the one Spark
    gave: a query's batches depend only on the driver calls the schedule makes. Turn the
    cache off when the test also checks what a run does outside its batches (a
    ``foreach_batch`` function's side effects, files written), or when ``topology``
    (or ``to_record``) reads something that changes between examples. Runs that raise
    are not kept. Arguments whose values cannot be hashed (beyond mappings and lists,
    which are frozen for the key) turn the cache off for that call.

    Every ``schedule`` starts at the driver's ``start_time`` with no state, as each
    hypothesis example must: on a new driver, or on the driver an earlier call made for
    the same topology and options, after :meth:`~pyspark_streamtest.TopologyTestDriver.reset`
    (which gives the same batches as a new driver, without building the topology's
    DataFrames again). With ``cache=False``, ``freeze_python_clock=True`` (a kept driver
    would keep Python's clock frozen between examples) or options that cannot be hashed,
    each run gets a new driver, closed before returning; kept drivers are closed by
    :func:`clear_run_cache`.
    """
    return _run(("topology", topology), schedule, spark, input, output, trigger_interval,
                driver_options, (to_record, key_serializer, value_serializer), cache)


def run_app(
    app: Callable[..., None],
    schedule: Schedule,
    *,
    output: str,
    spark: SparkSession | None = None,
    input: str | None = None,
    trigger_interval: timedelta = timedelta(seconds=1),
    driver_options: Mapping[str, Any] | None = None,
    to_record: RecordFunction | Mapping[str, RecordFunction] | None = None,
    key_serializer: SerializerChoice = None,
    value_serializer: SerializerChoice = None,
    cache: bool = True,
) -> tuple[BatchRecord, ...]:
    """:func:`run_topology` for a production job: the schedule runs on
    ``TopologyTestDriver.from_app(app, spark=spark, trigger_interval=trigger_interval,
    **driver_options)``, a driver kept and reset between runs, with the same cache.

    ``driver_options`` holds ``from_app``'s own options too (``inputs``, ``topics``,
    ``schemas``, ``ignore_options``, ``outputs``: ``outputs=["name"]`` starts only the
    queries the test reads) and the constructor's (``start_time``, ``sql_conf``...).
    ``trigger_interval`` is given to the driver, so a ``Tick`` is one trigger whatever
    trigger the job sets itself. A job usually reads several inputs: each ``Pipe`` of
    the schedule names its input (``schedules({"orders": ..., "payments": ...})``
    draws such schedules), or ``input`` names the one the others go to. ``to_record``
    maps an event to the record the job's source takes, e.g. the event time inside a
    JSON value::

        def order(event):
            value = {"order_id": event.value, "at": event.timestamp.isoformat()}
            return event.key, value, event.timestamp

    Its keys and values go through ``key_serializer`` and ``value_serializer``
    (default ``"auto"``: a dict as JSON, a str as UTF-8). A file source landed by the
    test (``driver_options={"land_files": True}``) takes each ``Pipe``'s events as one
    file, ``to_record``'s value each event's line (a dict as JSON; see
    :func:`~pyspark_streamtest.testing.strategies.run_schedule`). ``output`` is the query whose
    batches are returned (the job's ``queryName``, or the name ``from_app`` gave it).
    Turn the cache off (``cache=False``) when the job writes files or reads anything
    that changes between examples.
    """
    return _run(("app", app), schedule, spark, input, output, trigger_interval,
                driver_options, (to_record, key_serializer, value_serializer), cache)


def _run(made_by: tuple[str, Callable[..., None]], schedule: Schedule,
         spark: SparkSession | None, input: str | None, output: str,
         trigger_interval: timedelta, driver_options: Mapping[str, Any] | None,
         piping: tuple[Any, Any, Any], cache: bool) -> tuple[BatchRecord, ...]:
    if not isinstance(schedule, Schedule):
        raise InvalidArgument(f"schedule={schedule!r} must be a Schedule")
    if not isinstance(trigger_interval, timedelta):
        raise InvalidArgument(f"trigger_interval={trigger_interval!r} must be a timedelta")
    options = dict(driver_options or {})
    key = _key(made_by, schedule, spark, input, output, trigger_interval, options,
               piping) if cache else None
    if key is not None and key in _runs:
        _runs.move_to_end(key)
        return _runs[key]
    global _played
    _played += 1
    # A kept driver with a frozen Python clock would keep it frozen between examples.
    reuse = cache and not options.get("freeze_python_clock", False)
    kept = _driver_key(made_by, spark, trigger_interval, options) if reuse else None
    driver = _driver_for(kept, made_by, spark, trigger_interval, options)
    to_record, key_serializer, value_serializer = piping
    try:
        batches = run_schedule(driver, schedule, input=input, output=output,
                               trigger_interval=trigger_interval, to_record=to_record,
                               key_serializer=key_serializer,
                               value_serializer=value_serializer)
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


def _new_driver(made_by: tuple[str, Callable[..., None]], spark: SparkSession | None,
                interval: timedelta, options: dict[str, Any]) -> TopologyTestDriver:
    kind, function = made_by
    if kind == "app":
        return TopologyTestDriver.from_app(function, spark=spark, trigger_interval=interval,
                                           **options)
    return TopologyTestDriver(function, spark=spark, trigger_interval=interval, **options)


def _driver_for(key: Hashable | None, made_by: tuple[str, Callable[..., None]],
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
        return _new_driver(made_by, spark, interval, options)
    with _open_drivers.shared():  # kept across examples: clear_run_cache closes it
        driver = _new_driver(made_by, spark, interval, options)
    _drivers[key] = driver
    while len(_drivers) > _DRIVERS_KEPT:
        _drivers.popitem(last=False)[1].close()
    return driver


def _driver_key(made_by: tuple[str, Callable[..., None]], spark: SparkSession | None,
                interval: timedelta, options: dict[str, Any]) -> Hashable | None:
    frozen = tuple(sorted((name, _frozen(value)) for name, value in options.items()))
    return _hashable_or_none((made_by, spark, interval, frozen))


def _hashable_or_none(key: Hashable) -> Hashable | None:
    try:
        hash(key)
    except TypeError:
        return None
    return key


def spark_runs() -> int:
    """How many schedules :func:`run_topology` has played on a driver in this process
    (the ones its cache answered are not counted)."""
    return _played


def _key(made_by: tuple[str, Callable[..., None]], schedule: Schedule,
         spark: SparkSession | None, input: str | None, output: str, interval: timedelta,
         options: dict[str, Any], piping: tuple[Any, Any, Any]) -> Hashable | None:
    driver_key = _driver_key(made_by, spark, interval, options)
    if driver_key is None:
        return None
    return _hashable_or_none((driver_key, schedule, input, output, _frozen(piping)))


def _frozen(value: Any) -> Any:
    """``value`` with its mappings, lists and sets frozen (so that it can be hashed)."""
    if isinstance(value, Mapping):
        return ("mapping", tuple(sorted(((k, _frozen(v)) for k, v in value.items()),
                                        key=lambda item: repr(item[0]))))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return frozenset(_frozen(v) for v in value)
    return value
