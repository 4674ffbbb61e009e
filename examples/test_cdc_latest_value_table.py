"""Tests of example 2: upserts and tombstones through a state-backed table."""

from __future__ import annotations

from examples.cdc_latest_value_table import topology


def test_tombstones_delete_keys_from_state_and_the_table(topology_driver):
    driver = topology_driver(topology)
    cdc = driver.create_input_topic("customers-cdc", key_serializer="string",
                                    value_serializer="json")
    table = driver.create_output_topic("customers-table", key_deserializer="string",
                                       value_deserializer="json")

    cdc.pipe_key_value_list([
        ("c1", {"name": "Ada", "tier": "gold"}),
        ("c2", {"name": "Bob", "tier": "free"}),
        ("c1", {"name": "Ada", "tier": "platinum"}),  # a later upsert wins
    ])
    driver.process_all_available()
    assert table.read_key_values_to_map() == {
        "c1": {"name": "Ada", "tier": "platinum"},
        "c2": {"name": "Bob", "tier": "free"},
    }
    assert driver.batches[-1].num_state_rows_total == 2

    cdc.pipe_input("c2", None)  # tombstone: Bob is deleted
    cdc.pipe_input("c3", {"name": "Cy", "tier": "free"})
    driver.process_all_available()
    changelog = table.read_key_values_to_list()
    assert sorted(changelog, key=lambda kv: kv.key) == [
        ("c2", None),  # the table's own tombstone
        ("c3", {"name": "Cy", "tier": "free"}),
    ]
    assert driver.batches[-1].num_state_rows_total == 2  # c1 and c3: c2's state is gone

    cdc.pipe_input("c3", None)
    cdc.pipe_input("c3", {"name": "Cy", "tier": "gold"})  # deleted and re-created in one batch
    cdc.pipe_input("c1", None)
    driver.process_all_available()
    assert table.read_key_values_to_map(tombstones="delete") == {
        "c3": {"name": "Cy", "tier": "gold"}}
    assert driver.batches[-1].num_state_rows_total == 1

    driver.restart()  # state comes back from the checkpoint
    cdc.pipe_input("c3", {"name": "Cy", "tier": "free"})
    driver.process_all_available()
    assert table.read_key_values_to_list() == [("c3", {"name": "Cy", "tier": "free"})]
    assert driver.batches[-1].num_state_rows_total == 1
