"""Tolerant assertions on real queries: doubles Spark computes (a product, an average)
compared within a tolerance or with pytest.approx, a processing-time column left out,
the batch of each actual row still named, and a scenario's expect with rtol."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyspark_streamtest import OutputMismatchError, Topology, assert_values_equal
from pyspark_streamtest.errors import InvalidArgumentError
from pyspark_streamtest.gates.scenario import run_scenario


def gross_prices(t: Topology) -> None:
    orders = t.input("orders", schema="id INT, user STRING, amount DOUBLE")
    t.output("gross", orders.select(
        "id", "user", (F.col("amount") * 1.1).alias("gross"),
        F.current_timestamp().alias("seen")))


def averages(t: Topology) -> None:
    orders = t.input("orders", schema="id INT, user STRING, amount DOUBLE")
    t.output("averages", orders.groupBy("user").agg(F.avg("amount").alias("avg")),
             output_mode="update")


def test_products_within_a_tolerance_leaving_out_columns(topology_driver):
    driver = topology_driver(gross_prices)
    orders = driver.create_input_topic("orders")
    gross = driver.create_output_topic("gross")
    orders.pipe_value_list([(1, "a", 3.0), (2, "b", 0.1)])
    driver.process_all_available()  # batch 0: 3.0 * 1.1 == 3.3000000000000003 in doubles
    gross.assert_values([{"user": "b", "gross": 0.11}, {"user": "a", "gross": 3.3}],
                        rtol=1e-9, ignore_order=True, ignore_columns=["id", "seen"])
    assert gross.is_empty()

    orders.pipe_input((3, "a", 3.0))
    driver.process_all_available()  # batch 1
    with pytest.raises(OutputMismatchError) as caught:
        gross.assert_values([{"user": "a", "gross": 3.3}], ignore_columns=["id", "seen"])
    assert str(caught.value).splitlines() == [
        "output 'gross': 1 values expected, 1 read; 1 differ (wide values: a field per "
        "line); ignoring columns: id, seen",
        "  *   0  (batch 1)    gross: 3.3 != 3.3000000000000003",
        "          field  expected                                actual",
        "        * gross  3.3                                     3.3000000000000003",
        '          user   "a"                                     "a"',
    ]


def test_a_refused_column_name_reads_nothing(topology_driver):
    driver = topology_driver(gross_prices)
    driver.create_input_topic("orders").pipe_value_list([(1, "a", 1.0), (2, "b", 2.0)])
    driver.process_all_available()
    gross = driver.create_output_topic("gross")
    with pytest.raises(InvalidArgumentError,
                       match="their fields are gross, id, seen, user: check the spelling"):
        gross.assert_values([{"user": "a"}, {"user": "b"}], ignore_columns=["sen"])
    assert gross.queue_size == 2
    gross.assert_values([{"id": 1, "user": "a", "gross": 1.1},
                         {"id": 2, "user": "b", "gross": 2.2}],
                        ignore_order=True, atol=1e-12, ignore_columns=["seen"])


def test_averages_with_pytest_approx_name_their_batch(topology_driver):
    driver = topology_driver(averages)
    orders = driver.create_input_topic("orders")
    out = driver.create_output_topic("averages")
    orders.pipe_value_list([(1, "a", 0.1), (2, "a", 0.2)])
    driver.process_all_available()  # batch 0: (0.1 + 0.2) / 2 == 0.15000000000000002
    out.assert_values([{"user": "a", "avg": pytest.approx(0.15)}])

    orders.pipe_input((3, "a", 0.3))
    driver.process_all_available()  # batch 1: 0.6000000000000001 / 3
    with pytest.raises(OutputMismatchError) as caught:
        out.assert_values([{"user": "a", "avg": pytest.approx(0.25)}])
    lines = str(caught.value).splitlines()
    assert lines[1] == ("  *   0  (batch 1)    avg: approx(0.25 ± 2.5e-07) != "
                        "0.20000000000000004")


def test_last_batch_rows_compare_within_a_tolerance(topology_driver):
    driver = topology_driver(averages)
    orders = driver.create_input_topic("orders")
    out = driver.create_output_topic("averages")
    orders.pipe_value_list([(1, "a", 0.1), (2, "a", 0.2), (3, "b", 1.0 / 3)])
    driver.process_all_available()
    assert_values_equal(out.last_batch_rows(),  # as Spark's CheckLastBatch, any order
                        [{"user": "b", "avg": 0.333333333333}, {"user": "a", "avg": 0.15}],
                        ignore_order=True, rtol=1e-9)
    with pytest.raises(OutputMismatchError, match=r"compared with rtol=1e-15, atol=0.0"):
        assert_values_equal(out.last_batch_rows(),
                            [{"user": "b", "avg": 0.333333333333},
                             {"user": "a", "avg": 0.15}], ignore_order=True, rtol=1e-15)


SCENARIO = """\
topology: tolerant_topologies:gross_prices
steps:
  - pipe:
      topic: orders
      records: [{value: {id: 1, user: a, amount: 3.0}}, {value: {id: 2, user: b, amount: 0.1}}]
  - process
  - expect:
      topic: gross
      values: [{user: a, gross: 3.3}, {user: b, gross: 0.11}]
      ignore_columns: [id, seen]
"""

TOPOLOGY = """\
from pyspark.sql import functions as F


def gross_prices(t):
    orders = t.input("orders", schema="id INT, user STRING, amount DOUBLE")
    t.output("gross", orders.select(
        "id", "user", (F.col("amount") * 1.1).alias("gross"),
        F.current_timestamp().alias("seen")))
"""


def test_a_scenario_expect_with_rtol_and_ignored_columns(tmp_path, spark):
    (tmp_path / "tolerant_topologies.py").write_text(TOPOLOGY)
    exact = tmp_path / "exact.streamtest.yaml"
    exact.write_text(SCENARIO)
    result = run_scenario(exact, spark=spark)
    assert not result.passed and result.failed_step.kind == "expect"
    assert ("2 differ (order ignored) (wide values: a field per line); ignoring columns: "
            "id, seen") in result.failure
    assert "gross: 3.3 != 3.3000000000000003" in result.failure

    tolerant = tmp_path / "tolerant.streamtest.yaml"
    tolerant.write_text(SCENARIO + "      rtol: 1e-9\n")
    result = run_scenario(tolerant, spark=spark)
    assert result.passed, result.message
