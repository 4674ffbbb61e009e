"""The canned streams: each reference pipeline writes exactly its expected results."""

from __future__ import annotations

import pytest

from pyspark_streamtest.gates.canned import load


@pytest.mark.parametrize("name", ["clickstream", "customers_cdc", "iot_readings",
                                  "orders_payments"])
def test_reference_pipeline_writes_the_expected_results(topology_driver, name):
    stream = load(name)
    driver = topology_driver(stream.topology)
    stream.replay(driver)
    assert stream.read_outputs(driver) == stream.expected


def test_what_each_stream_exercises(topology_driver, streamtest_clickstream,
                                    streamtest_customers_cdc, streamtest_iot_readings):
    driver = topology_driver(streamtest_clickstream.topology)
    streamtest_clickstream.replay(driver)
    assert [b.num_rows_dropped_by_watermark for b in driver.batches] == [0, 0, 0, 0, 0, 1]
    assert [x.record.value["url"] for x in driver.late_records("counts")] == ["/late"]

    driver = topology_driver(streamtest_iot_readings.topology)
    streamtest_iot_readings.replay(driver)
    # s2's clock runs 40 s behind, yet its readings count (within the 30 s grace of the
    # previous batch's watermark), except the last, which arrives after minute 1 closed.
    assert [(x.record.value["sensor"], x.batch_id) for x in driver.late_records("averages")] == [
        ("s2", 6)]

    driver = topology_driver(streamtest_customers_cdc.topology)
    streamtest_customers_cdc.replay(driver)
    table = driver.create_output_topic("customers-table", key_deserializer="string",
                                       value_deserializer="json")
    assert table.read_key_values_to_map(tombstones="delete") == {
        "c2": {"name": "Bob", "tier": "pro"}, "c3": {"name": "Cy", "tier": "gold"}}


def test_unknown_stream_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown canned stream 'x'; known: clickstream, "
                                         "customers_cdc, iot_readings, orders_payments"):
        load("x")
