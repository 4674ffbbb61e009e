"""Golden timelines: write, match, and a diff that names the batch that changed."""

from __future__ import annotations

import textwrap

pytest_plugins = ["pytester"]

CHILD_CONFTEST = """
import pytest
from pyspark.sql import SparkSession

@pytest.fixture(scope="session")
def spark():  # borrow the outer run's session instead of making (and stopping) one
    return SparkSession.getActiveSession()
"""

CHILD_TEST = """
from datetime import datetime, timedelta, timezone
from tests.helpers import clicks_per_user

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

def test_clicks(topology_driver, streamtest_golden):
    driver = topology_driver(clicks_per_user)
    clicks = driver.create_input_topic("clicks")
    clicks.pipe_input({{"user": "a", "url": "/"}}, timestamp=T0 + timedelta(seconds=1))
    clicks.pipe_input({{"user": "a", "url": "/x"}}, timestamp=T0 + timedelta(seconds={late}))
    driver.process_all_available()
    clicks.pipe_input({{"user": "b", "url": "/"}}, timestamp=T0 + timedelta(seconds=21))
    driver.process_all_available()
    streamtest_golden(driver, "clicks")
"""


def _child(pytester, late: int) -> None:
    pytester.makeconftest(CHILD_CONFTEST)
    pytester.makepyfile(test_child=CHILD_TEST.format(late=late))


def test_golden_is_written_matched_and_diffed_by_batch(pytester, spark):
    _child(pytester, late=7)
    missing = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no golden file *clicks.timeline; run once with "
                                  "--streamtest-update-golden*"])

    written = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-update-golden")
    written.assert_outcomes(passed=1)
    text = (pytester.path / "golden" / "clicks.timeline").read_text()
    assert text.splitlines()[:4] == [
        "# pyspark-streamtest golden timeline (rewrite with --streamtest-update-golden)",
        "batch 0 of counts at 2024-01-01T00:00:00.000Z: watermark 1970-01-01T00:00:00.000Z -> "
        "2023-12-31T23:59:57.000Z, 2 in, 0 out, 0 dropped late, 1 state rows",
        '  in clicks {"ts":"2024-01-01T00:00:01.000Z","url":"/","user":"a"} '
        "@2024-01-01T00:00:01.000Z",
        '  in clicks {"ts":"2024-01-01T00:00:07.000Z","url":"/x","user":"a"} '
        "@2024-01-01T00:00:07.000Z",
    ]
    assert '  out {"count":2,"user":"a","window":{"end":"2024-01-01T00:00:10.000Z",' \
           '"start":"2024-01-01T00:00:00.000Z"}}' in text.splitlines()
    assert str(pytester.path) not in text  # nothing machine-specific

    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)

    _child(pytester, late=5)  # a change: the second click moves from 7 s to 5 s
    changed = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        "*the batch history differs from clicks.timeline (--streamtest-update-golden rewrites*",
        "*first difference in the batch #1 of the history:*",
        "*-batch 0 of counts at 2024-01-01T00:00:00.000Z: watermark 1970-01-01T00:00:00.000Z "
        "-> 2023-12-31T23:59:57.000Z*",
        "*+batch 0 of counts at 2024-01-01T00:00:00.000Z: watermark 1970-01-01T00:00:00.000Z "
        "-> 2023-12-31T23:59:55.000Z*",
    ])
    assert spark.streams.active == []


def test_difference_summary_counts_missing_and_extra_batches():
    from pyspark_streamtest.reporting.golden import describe_difference

    old = textwrap.dedent("""\
        # header
        batch 0 of o at t: a
          in x 1
        batch 1 of o at t: b
        """)
    new = "# header\nbatch 0 of o at t: a\n  in x 1\n"
    assert describe_difference(old, new).splitlines()[0] == (
        "1 batch(es) fewer than the golden file; the first missing: batch 1 of o at t: b")
    assert describe_difference(new, old).splitlines()[0] == (
        "1 batch(es) more than the golden file, from: batch 1 of o at t: b")


def test_a_failing_driver_test_shows_the_batch_timeline(pytester, spark):
    pytester.makeconftest(CHILD_CONFTEST)
    pytester.makepyfile(test_fails="""
from datetime import datetime, timezone
from tests.helpers import clicks_per_user

def test_wrong_expectation(topology_driver):
    driver = topology_driver(clicks_per_user)
    driver.create_input_topic("clicks").pipe_input(
        {"user": "a", "url": "/"}, timestamp=datetime(2024, 1, 1, 0, 0, 4, tzinfo=timezone.utc))
    driver.process_all_available()
    assert driver.create_output_topic("counts").read_values_to_list() == [{"count": 1}]
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*- streamtest timeline -*",
        "batch  output  processing time          watermark                wm after*",
        "    0  counts  2024-01-01 00:00:00.000  1970-01-01 00:00:00.000  2023-12-31 23:59:54.000   1"
        "    0        0      1",
    ])
    assert spark.streams.active == []


def test_determinism_marker_passes_a_deterministic_test_and_catches_randomness(pytester, spark):
    pytester.makeconftest(CHILD_CONFTEST)
    pytester.makepyfile(test_gate="""
import pytest
from pyspark.sql import functions as F
from tests.helpers import clicks_per_user

def noisy(t):
    t.output("o", t.input("x", schema="v INT").select("v", (F.rand() * 1000).cast("int").alias("r")))

@pytest.mark.streamtest_determinism(runs=3)
def test_steady(topology_driver):
    driver = topology_driver(clicks_per_user)
    driver.create_input_topic("clicks").pipe_value_list(
        [{"user": u, "url": "/"} for u in "abcab"])
    driver.process_all_available()

@pytest.mark.streamtest_determinism(runs=2)
def test_noisy(topology_driver):
    driver = topology_driver(noisy)
    driver.create_input_topic("x").pipe_value_list([{"v": i} for i in range(5)])
    driver.process_all_available()
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--streamtest-cpu-load", "1")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*run 2 of 2 differs from run 1; the topology or the test is not deterministic:*",
        "*first difference in the batch #1 of the history:*",
    ])
    assert spark.streams.active == []
