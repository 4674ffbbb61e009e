"""The stop/start stress test, after Spark's ``runStressTest``: a seeded random
interleaving of pipes, clock moves, restarts, stops and starts and crashes (a batch that
fails, is fixed and retried) must end with the same outputs and state as an undisturbed
run of the same input. On a difference hypothesis shrinks the action list to a minimal
one. CI runs a small budget; ``pytest -m stress`` runs a larger one
(``STREAMTEST_STRESS_EXAMPLES``, default 60)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pyspark_streamtest import StreamingQueryFailedError, Topology, TopologyTestDriver
from pyspark_streamtest.core.features import Feature, supported_features

CI_EXAMPLES = int(os.environ.get("STREAMTEST_EXAMPLES", "25")) // 5 or 1
STRESS_EXAMPLES = int(os.environ.get("STREAMTEST_STRESS_EXAMPLES", "60"))


@dataclass(frozen=True)
class Pipe:
    users: tuple[str, ...]


@dataclass(frozen=True)
class Advance:
    seconds: int


@dataclass(frozen=True)
class Restart:
    pass


@dataclass(frozen=True)
class StopStart:
    """Stop, pipe and move the clock while stopped, then start."""

    users: tuple[str, ...]
    seconds: int


@dataclass(frozen=True)
class Crash:
    """The next batch fails (a bug), the bug is fixed, a restart retries the batch."""


Action = Pipe | Advance | Restart | StopStart | Crash

_users = st.lists(st.sampled_from("abc"), min_size=1, max_size=3).map(tuple)
actions = st.lists(
    st.one_of(
        _users.map(Pipe),
        st.integers(0, 3).map(Advance),
        st.just(Restart()),
        st.builds(StopStart, _users, st.integers(0, 2)),
        st.just(Crash()),
    ),
    min_size=1,
    max_size=8,
)


def _counts_with_a_fixable_bug(marker: Path):
    def check(user):  # no type hints: PySpark would read them as a pandas UDF
        if os.path.exists(marker):
            raise ValueError("the bug")
        return user

    udf = F.udf(check, StringType())

    def topology(t: Topology) -> None:
        clicks = t.input("clicks", schema="user STRING")
        t.output("counts", clicks.select(udf("user").alias("user")).groupBy("user").count(),
                 output_mode="update")

    return topology


def _run(spark, marker: Path, plan: list[Action], *, disturbed: bool):
    """Play ``plan``; the undisturbed run only pipes and moves the clock. Returns the
    latest count per user the output said, and the state store (where readable)."""
    with TopologyTestDriver(_counts_with_a_fixable_bug(marker), spark=spark) as driver:
        clicks = driver.create_input_topic("clicks")
        for action in plan:
            if isinstance(action, Pipe):
                clicks.pipe_value_list([(u,) for u in action.users])
            elif isinstance(action, Advance):
                driver.advance_wall_clock(timedelta(seconds=action.seconds))
            elif isinstance(action, StopStart):
                if disturbed:
                    driver.stop()
                clicks.pipe_value_list([(u,) for u in action.users])
                driver.advance_wall_clock(timedelta(seconds=action.seconds))
                if disturbed:
                    driver.start()
            elif isinstance(action, Restart) and disturbed:
                driver.restart()
            elif isinstance(action, Crash) and disturbed:
                clicks.pipe_input(("a",))
                marker.touch()
                try:
                    with pytest.raises(StreamingQueryFailedError):
                        driver.process_all_available()
                finally:
                    marker.unlink()
                driver.restart()
            elif isinstance(action, Crash):
                clicks.pipe_input(("a",))
                driver.process_all_available()
        driver.process_all_available()
        latest = {v["user"]: v["count"] for v in
                  driver.create_output_topic("counts").read_values_to_list()}
        state = None
        if Feature.STATE_STORE_READS in supported_features(spark):
            state = driver.get_key_value_store("counts").to_dict()
        return latest, state


def _check(spark, tmp_path_factory, plan: list[Action]) -> None:
    marker = tmp_path_factory.mktemp("stress") / "bug"
    undisturbed = _run(spark, marker, plan, disturbed=False)
    disturbed = _run(spark, marker, plan, disturbed=True)
    assert disturbed == undisturbed, plan


@settings(max_examples=CI_EXAMPLES)
@given(plan=actions)
def test_stops_starts_restarts_and_crashes_change_no_result(spark, tmp_path_factory, plan):
    _check(spark, tmp_path_factory, plan)


@pytest.mark.stress
@settings(max_examples=STRESS_EXAMPLES)
@given(plan=st.lists(actions, min_size=1, max_size=3).map(lambda ls: [a for x in ls for a in x]))
def test_stress_stops_starts_restarts_and_crashes_change_no_result(
    spark, tmp_path_factory, plan
):
    _check(spark, tmp_path_factory, plan)

