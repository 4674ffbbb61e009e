from two_queries_job import main


def test_only_paid_orders_pass(topology_driver):
    driver = topology_driver.from_app(main, outputs=["paid"])
    orders = driver.create_input_topic("orders", value_serializer="string")
    orders.pipe_value_list(["0", "1", "150"])
    driver.process_all_available()
    paid = driver.create_output_topic("paid").read_values_to_list()
    assert [r["amount"] for r in paid] == [1, 150]
