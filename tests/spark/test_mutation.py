"""``--streamtest-mutate``: mutants of real topologies, run by real tests on Spark.

Inner pytest runs (in this process, on this Spark session) run the suites in
``mutation_suites/``: a windowed count with a deliberately weak test and its strong
twin, and a session-window job whose update-mode mutant Spark refuses.
"""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

with contextlib.suppress(ImportError):  # see test_failure_reports: numpy cannot load twice
    import numpy  # noqa: F401

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _loaded_before_the_inner_runs(spark):
    """An inner run takes out, when it ends, the modules it imported first (pytester's
    snapshot of sys.modules): PySpark's column classes imported there would load again
    in the next run, and columns of the first class would not be columns to the
    second. Made here first, they stay."""
    from pyspark.sql import functions as F

    import pyspark_streamtest.mutate.mutator  # noqa: F401

    events = spark.range(1).selectExpr("current_timestamp() AS ts")
    events.groupBy(F.window("ts", "1 second")).count()
    events.groupBy(F.session_window("ts", "1 second")).count()
    events.where(F.col("ts") > F.col("ts") - F.expr("INTERVAL 1 SECOND")).dropDuplicates(["ts"])

SUITES = Path(__file__).parent / "mutation_suites"
WATERMARK_AND_WINDOW = {
    ('withWatermark("ts", "10 seconds")', '"0 seconds"'),
    ('withWatermark("ts", "10 seconds")', '"5 seconds"'),
    ('withWatermark("ts", "10 seconds")', '"20 seconds"'),
    ('withWatermark("ts", "10 seconds")', '"11 seconds"'),
    ('window("ts", "10 seconds")', '"9 seconds"'),
    ('window("ts", "10 seconds")', '"11 seconds"'),
    ('window("ts", "10 seconds")', '"20 seconds"'),
}


def _suite(pytester: pytest.Pytester, job: str, **tests: str) -> None:
    pytester.syspathinsert()
    pytester.makepyfile(**{job: (SUITES / f"{job}.py").read_text()})
    pytester.makepyfile(**{name: (SUITES / f"{source}.py").read_text()
                           for name, source in tests.items()})


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def _fates(path: Path) -> dict[tuple[str, str], str]:
    document = json.loads(path.read_text())
    return {(m["original"], m["replacement"]): m["status"] for m in document["mutants"]}


def test_a_weak_test_leaves_the_watermark_and_window_mutants_alive_and_fails_the_gate(
        pytester, spark):
    _suite(pytester, "windows_job", test_weak="weak")
    result = _run(pytester, "--streamtest-mutate", "--streamtest-mutate-min-score=90",
                  "--streamtest-mutate-json=m.json", "--streamtest-mutate-junit=m.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the gate, the test itself passed
    result.assert_outcomes(passed=1)
    fates = _fates(pytester.path / "m.json")
    assert {mutant for mutant, fate in fates.items() if fate == "survived"} == (
        WATERMARK_AND_WINDOW)
    # update mode emits every change: the flush record's own window comes out
    assert fates[('outputMode("append")', '"update"')] == "killed"
    result.stdout.fnmatch_lines([
        "*windows_job:windowed_counts: 8 mutants, 0 invalid, 1 killed, 7 survived: "
        "score 12.5 %*",
        '*survived  windows_job.py:6  withWatermark("ts", "10 seconds") → "20 seconds"*',
        "*tests: test_every_click_is_counted*",
        "*no test tells a delay of 10 seconds from 20 seconds: none pipes a record",
        "*between 10 seconds and 20 seconds older than the newest of an earlier batch",
        "*FAILED: the mutation score is 12.5 %, below --streamtest-mutate-min-score 90*",
    ])
    junit = ET.parse(pytester.path / "m.xml").getroot()
    (suite,) = junit
    assert (suite.get("tests"), suite.get("failures")) == ("8", "7")


def test_its_strong_twin_kills_every_mutant(pytester, spark):
    _suite(pytester, "windows_job", test_strong="strong")
    result = _run(pytester, "--streamtest-mutate", "--streamtest-mutate-min-score=100",
                  "--streamtest-mutate-json=m.json")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)
    fates = _fates(pytester.path / "m.json")
    assert len(fates) == 8 and set(fates.values()) == {"killed"}
    assert set(fates) >= WATERMARK_AND_WINDOW


def test_a_mutant_spark_refuses_at_start_is_invalid_and_not_counted(pytester, spark):
    _suite(pytester, "sessions_job", test_sessions="sessions")
    result = _run(pytester, "--streamtest-mutate", "--streamtest-mutate-json=m.json")
    result.assert_outcomes(passed=1)
    document = json.loads((pytester.path / "m.json").read_text())
    fates = {(m["original"], m["replacement"]): m for m in document["mutants"]}
    update = fates[('outputMode("append")', '"update"')]
    assert update["status"] == "invalid"
    assert "session" in update["reason"].lower() or "update" in update["reason"].lower()
    counts = document["counts"]
    assert counts["invalid"] == 1
    assert document["score"] == pytest.approx(
        100 * counts["killed"] / (counts["killed"] + counts["survived"]))


def test_a_sample_is_the_same_for_a_seed_and_nothing_of_a_mutant_outlives_its_run(
        pytester, spark):
    from pyspark.sql import functions

    with_watermark = type(spark.range(0)).withWatermark
    window = functions.window
    _suite(pytester, "windows_job", test_strong="strong")
    runs = []
    for _ in range(2):
        result = _run(pytester, "--streamtest-mutate", "--streamtest-mutate-max=3",
                      "--streamtest-mutate-seed=5", "--streamtest-mutate-json=m.json")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["*overall (a sample of 3 of 8, seed 5): 3 mutants*"])
        runs.append(sorted(m["id"] for m in json.loads(
            (pytester.path / "m.json").read_text())["mutants"]))
    assert runs[0] == runs[1] and len(runs[0]) == 3
    # the same tests, unmutated, in the same process: they pass, the API is Spark's own
    _run(pytester).assert_outcomes(passed=2)
    assert type(spark.range(0)).withWatermark is with_watermark
    assert functions.window is window


def test_a_mutant_of_a_query_no_test_runs_is_unreached_not_surviving(pytester, spark, request):
    # the test runs the job with from_app(outputs=["paid"]): the job still builds
    # "large", so its filter's mutant is made, but no query that runs changes. Under
    # --streamtest-connect the inner run is a Connect one too (tox.ini's [connect] more).
    from pyspark_streamtest.plugin._options import setting

    mode = ("--streamtest-connect",) if setting(request.config, "streamtest_connect") else ()
    _suite(pytester, "two_queries_job", test_only_paid="only_paid")
    result = _run(pytester, *mode, "--streamtest-mutate", "--streamtest-mutate-json=m.json")
    result.assert_outcomes(passed=1)
    document = json.loads((pytester.path / "m.json").read_text())
    fates = {(m["original"], m["replacement"]): m for m in document["mutants"]}
    assert {mutant: m["status"] for mutant, m in fates.items()} == {
        ('col("amount") > 0', ">="): "killed",  # in "paid": the test sees it
        ('outputMode("append")', '"update"'): "survived",  # "paid" is stateless
        ('col("amount") >= 100', ">"): "unreached",
    }
    assert fates[('col("amount") >= 100', ">")]["reason"] == (
        "it changes no query its tests run, only queries from_app(outputs=...) leaves "
        "out ('large')")
    result.stdout.fnmatch_lines([
        "*two_queries_job:main: 3 mutants, 0 invalid, 1 unreached, 1 killed, 1 survived: "
        "score 50.0 %*"])


def test_two_builds_of_a_query_share_a_shape_and_a_change_past_the_25th_field_shows(spark):
    from pyspark_streamtest._spark.query.plan import plan_shape

    def build(last):
        stream = spark.readStream.format("rate").load()
        columns = [f"value + {i} AS c{i}" for i in range(39)] + [f"value + {last} AS c39"]
        return stream.withWatermark("timestamp", "1 second").selectExpr(*columns)

    assert plan_shape(build(39)) == plan_shape(build(39))  # new ids, hash codes, UUIDs
    assert plan_shape(build(39)) != plan_shape(build(40))  # Spark's toString cuts at 25
