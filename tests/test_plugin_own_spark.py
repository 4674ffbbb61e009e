"""A project's own ``spark`` fixture overrides the plugin's, by pytest's rules, and
``topology_driver`` makes its drivers on the project's session (Spark: one driver, one
batch, on the outer run's session)."""

from __future__ import annotations

from pyspark_streamtest.core.query_names import is_drivers_query

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

MADE = []

@pytest.fixture(scope="session")
def spark():
    from pyspark_streamtest import test_spark_session

    # A session of its own (its own SQL settings and queries) on the running context.
    own = test_spark_session().newSession()
    own.conf.set("spark.streamtest.owner", "the project's conftest")
    MADE.append(own)
    return own
"""

TEST = """
from pyspark.sql import functions as F

from pyspark_streamtest.core.query_names import QUERY_PREFIX, is_drivers_query

import conftest

SEEN = []

def upper(t):
    words = t.input("words", schema="word STRING")
    SEEN.append(words.sparkSession)
    t.output("upper", words.select(F.upper("word").alias("word")), output_mode="append")

def test_the_driver_runs_on_the_project_s_session(topology_driver):
    driver = topology_driver(upper)
    (own,) = conftest.MADE  # topology_driver asked for the spark fixture: the conftest's
    # The topology was built on it (twice under --streamtest-oracle: the twin builds it
    # again), and the driver's queries run there.
    assert SEEN and all(seen is own for seen in SEEN)
    assert own.conf.get("spark.streamtest.owner") == "the project's conftest"
    queries = [q.name for q in own.streams.active]
    assert any(name.startswith(QUERY_PREFIX) for name in queries)
    assert all(is_drivers_query(name) for name in queries)

    driver.create_input_topic("words").pipe_input({"word": "hi"})
    driver.process_all_available()
    assert driver.create_output_topic("upper").read_values_to_list() == [{"word": "HI"}]
"""


def test_a_project_s_spark_fixture_is_the_one_topology_driver_uses(pytester, spark):
    """``spark``: the outer run's session exists, so the child's ``test_spark_session()``
    returns it and the child stops nothing of it."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_child=TEST)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not [q for q in spark.streams.active if is_drivers_query(q.name)]
