"""Declarative pipelines under PipelineTestDriver, against Spark's own engine: the
hazards a graph carries, failed flows and refused definitions as typed errors, what a
driver leaves behind, and the refusals of bad arguments. The example's own tests
(examples/test_orders_pipeline.py) cover the updates, tables, topics and state."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from pyspark_streamtest import (
    DriverClosedError,
    Feature,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LostRowsError,
    PipelineDefinitionError,
    PipelineHazardError,
    PipelineUpdateError,
    UnknownDatasetError,
)

pytestmark = pytest.mark.streamtest_requires(Feature.DECLARATIVE_PIPELINES)

PIPELINES = Path(__file__).parent / "pipelines"
TWO_FLOWS = {"current": "current.path", "legacy": "legacy.path"}


def _orders(prefix: str, count: int) -> list[str]:
    return [json.dumps({"order_id": f"{prefix}{i}", "amount": i}) for i in range(count)]


def test_two_streaming_flows_into_one_file_table_are_refused_with_the_fix(topology_driver):
    with pytest.raises(PipelineHazardError, match=r"flows current, legacy all write "
                       r"streaming table orders \(parquet\).*give each flow a table of "
                       r"its own") as refused:
        topology_driver.from_pipeline(PIPELINES / "two_flows", file_inputs=TWO_FLOWS)
    (hazard,) = refused.value.hazards
    assert (hazard.kind, hazard.dataset, hazard.flows) == (
        "shared_commit_log", "orders", ("current", "legacy"))


def test_run_anyway_the_rows_a_flow_loses_are_named(topology_driver):
    pipeline = topology_driver.from_pipeline(PIPELINES / "two_flows", file_inputs=TWO_FLOWS,
                                             allow_hazards=True)
    pipeline.land_lines("current", _orders("c", 3))
    pipeline.land_lines("legacy", _orders("l", 2))
    with pytest.raises(LostRowsError, match=r"update 1 of pipeline 'two_flows' ended "
                       r"COMPLETED but lost rows of (current|legacy)") as lost:
        pipeline.run_update()
    # Both flows ran a batch 0; the table's log keeps the first to commit it (which one
    # is Spark's race). The other either lost the race (its files stay outside the
    # log, its retry skips the batch) or came second (skipped before writing).
    visible = sorted(r.order_id for r in pipeline.read_table("orders").collect())
    assert visible in (["c0", "c1", "c2"], ["l0", "l1"])
    loser = "legacy" if visible == ["c0", "c1", "c2"] else "current"
    assert lost.value.flows == (loser,)
    assert lost.value.update.state == "COMPLETED"
    in_files = sorted(row["order_id"] for rows in lost.value.lost.values() for row in rows)
    assert in_files in ([], sorted({"c0", "c1", "c2", "l0", "l1"} - set(visible)))
    if not in_files:
        assert f"flow {loser!r} batch 0 into 'orders': offered new data, ran no row" in str(
            lost.value)
    # The driver goes on: an update where one flow alone has data loses nothing.
    pipeline.land_lines(loser, _orders("d", 1))
    pipeline.run_update()
    assert "d0" in {r.order_id for r in pipeline.read_table("orders").collect()}


def test_a_watermark_on_a_pipeline_dataset_in_python_names_the_sql_form(topology_driver):
    with pytest.raises(PipelineDefinitionError, match=r"could not be registered in "
                       r"transformations/clicks.py:\d+: .*TABLE_OR_VIEW_NOT_FOUND.*"
                       r"declare the flow in SQL instead \(SELECT \.\.\. FROM STREAM name "
                       r"WATERMARK ts DELAY OF INTERVAL 10 MINUTES\)"):
        topology_driver.from_pipeline(PIPELINES / "watermark_in_python",
                                      file_inputs={"clicks": "clicks.path"})


def test_a_failed_flow_is_an_error_naming_the_flow_and_the_update(topology_driver, spark):
    pipeline = topology_driver.from_pipeline(PIPELINES / "failing_flow",
                                             file_inputs={"readings": "readings.path"})
    pipeline.land_lines("readings", ['{"sensor": "s1", "value": 1}'])
    assert pipeline.run_update().flows["readings"].state == "COMPLETED"
    # The session's temporary views (a memory sink's, say), which SHOW TABLES lists in
    # every database, are not the pipeline's tables.
    spark.range(1).createOrReplaceTempView("a_session_view")
    try:
        assert pipeline.table_names() == ["readings"]
    finally:
        spark.catalog.dropTempView("a_session_view")
    pipeline.land_lines("readings", ['{"sensor": "s2", "value": "not a number"'])
    with pytest.raises(PipelineUpdateError, match=r"(?s)update 2 of pipeline 'failing_flow' "
                       r"failed\n  flow 'readings': FAILED after 1 attempt: .*FAILED_READ_FILE.*"
                       r"MALFORMED_RECORD_IN_PARSING") as failed:
        pipeline.run_update()
    assert failed.value.update.flows["readings"].state == "FAILED"
    assert [u.number for u in pipeline.updates] == [1, 2]
    assert "update 2: FAILED" in pipeline.timeline()
    # What the completed update wrote stays readable.
    assert [r.sensor for r in pipeline.read_table("readings").collect()] == ["s1"]


def test_close_drops_the_tables_the_storage_and_the_graph(topology_driver, spark):
    pipeline = topology_driver.from_pipeline(PIPELINES / "failing_flow",
                                             file_inputs={"readings": "readings.path"})
    pipeline.land_lines("readings", ['{"sensor": "s1", "value": 1}'])
    pipeline.run_update()
    assert pipeline.table_names() == ["readings"]
    folder = Path(pipeline.input_path("readings")).parent.parent
    database = pipeline.database
    pipeline.close()
    pipeline.close()  # idempotent
    assert not folder.exists()
    assert database not in {d.name for d in spark.catalog.listDatabases()}
    with pytest.raises(DriverClosedError):
        pipeline.run_update()


@pytest.mark.parametrize(("options", "error", "match"), [
    pytest.param({"spec": PIPELINES / "nowhere"}, PipelineDefinitionError,
                 "does not exist", id="no-spec"),
    pytest.param({"spec": PIPELINES}, PipelineDefinitionError,
                 "no spark-pipeline.yml", id="folder-without-spec"),
    pytest.param({"spec": 3}, InvalidArgumentTypeError, "spec is the path", id="spec-type"),
    pytest.param({"timeout": 5}, InvalidArgumentError, "positive timedelta", id="timeout"),
    pytest.param({"configuration": {"a": 1}}, InvalidArgumentTypeError,
                 "str keys to str values", id="configuration"),
    pytest.param({"file_inputs": {"a b": "k"}}, InvalidArgumentError,
                 "letters, digits", id="input-name"),
    pytest.param({"allow_hazards": "yes"}, InvalidArgumentTypeError, "True or False",
                 id="allow-hazards"),
])
def test_bad_arguments_are_refused_by_name(topology_driver, options, error, match):
    arguments = {"spec": PIPELINES / "failing_flow",
                 "file_inputs": {"readings": "readings.path"}, **options}
    with pytest.raises(error, match=match):
        topology_driver.from_pipeline(arguments.pop("spec"), **arguments)


def test_bad_calls_on_a_driver_are_refused_by_name(topology_driver):
    pipeline = topology_driver.from_pipeline(PIPELINES / "failing_flow",
                                             file_inputs={"readings": "readings.path"},
                                             timeout=timedelta(minutes=2))
    with pytest.raises(UnknownDatasetError, match=r"no dataset 'nope'; its datasets: "
                       r"\['readings'\]"):
        pipeline.create_output_topic("nope")
    with pytest.raises(UnknownDatasetError, match="no dataset 'nope'"):
        pipeline.run_update(full_refresh=["nope"])
    with pytest.raises(InvalidArgumentTypeError, match="wrap it in a list"):
        pipeline.run_update(refresh="readings")
    with pytest.raises(UnknownDatasetError, match="no file input 'other'"):
        pipeline.land_lines("other", ["{}"])
    with pytest.raises(InvalidArgumentTypeError, match="wrap it in a list"):
        pipeline.land_lines("readings", "{}")
    pipeline.land_lines("readings", ["{}"], name="a.json")
    with pytest.raises(InvalidArgumentError, match="landed already"):
        pipeline.land_lines("readings", ["{}"], name="a.json")
    with pytest.raises(InvalidArgumentError, match="keeps no state"):
        pipeline.get_state_store("readings")
    with pytest.raises(UnknownDatasetError, match="has no flow 'nope'"):
        pipeline.get_state_store("nope")
    topic = pipeline.create_output_topic("readings")
    with pytest.raises(Exception, match="no record left to read"):
        topic.read_value()


def test_an_auto_cdc_flow_into_a_table_without_merge_is_refused_by_name(topology_driver):
    from pyspark import pipelines as dp

    if not hasattr(dp, "create_auto_cdc_flow"):
        pytest.skip("AutoCDC flows came with PySpark 4.2")
    with pytest.raises(PipelineHazardError, match=r"cannot run an update in Spark's engine:\n"
                       r"- AutoCDC flow customers MERGEs into customers, a parquet table, "
                       r"which has no row-level operations.*AUTOCDC_TARGET_DOES_NOT_SUPPORT_"
                       r"MERGE") as refused:
        topology_driver.from_pipeline(PIPELINES / "auto_cdc",
                                      file_inputs={"changes": "changes.path"},
                                      allow_hazards=True)
    assert [h.kind for h in refused.value.hazards] == ["auto_cdc_without_merge"]


def test_a_script_that_never_closes_its_driver_still_exits(tmp_path):
    """The driver's Connect client would keep the interpreter waiting at exit: the
    driver closes itself then (its database and folder go too)."""
    import subprocess
    import sys

    script = tmp_path / "leave_open.py"
    script.write_text(
        "import sys\n"
        "from pyspark_streamtest import TopologyTestDriver\n"
        f"d = TopologyTestDriver.from_pipeline({str(PIPELINES / 'failing_flow')!r},\n"
        "    file_inputs={'readings': 'readings.path'})\n"
        "d.land_lines('readings', ['{\"sensor\": \"s1\", \"value\": 1}'])\n"
        "d.run_update()\n"
        "print('folder', d.input_path('readings'), flush=True)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = next(line.split(" ", 1)[1] for line in done.stdout.splitlines()
                  if line.startswith("folder "))
    assert not Path(folder).exists()
    assert "Traceback" not in done.stderr


def test_a_source_folder_that_does_not_exist_is_refused_by_name(topology_driver, tmp_path):
    # Spark Connect analyses a Python flow's file source as it is registered.
    with pytest.raises(PipelineDefinitionError, match=r"could not be registered in "
                       r"transformations/readings.py:\d+: AnalysisException: \[PATH_NOT_FOUND\]"):
        topology_driver.from_pipeline(
            PIPELINES / "failing_flow",
            configuration={"readings.path": str(tmp_path / "nowhere")})


def test_what_a_flow_appends_to_a_file_sink_is_an_output_topic(topology_driver, tmp_path):
    """A sink (``dp.create_sink``) of a file format with a path is written by Spark's
    file sink: its output topic reads each update's committed batches, in the flow's
    schema. A sink of another format has no files to read: refused by name."""
    exported = tmp_path / "alerts"
    pipeline = topology_driver.from_pipeline(
        PIPELINES / "sinks", file_inputs={"readings": "readings.path"},
        configuration={"alerts.path": str(exported)})
    sink = pipeline.describe().datasets["alerts"]
    assert (sink.kind, sink.format, sink.path, sink.flows) == (
        "sink", "json", str(exported), ("high_readings",))
    with pytest.raises(InvalidArgumentError, match=r"sink 'console_out' writes format "
                       r"'console' with no path option: .*only a sink of a file format"):
        pipeline.create_output_topic("console_out")
    alerts = pipeline.create_output_topic("alerts")
    pipeline.land_lines("readings", ['{"sensor": "s1", "value": 5}',
                                     '{"sensor": "s2", "value": 12}'])
    pipeline.run_update()
    assert alerts.read_values_to_list() == [{"sensor": "s2", "doubled": 24}]
    pipeline.land_lines("readings", ['{"sensor": "s3", "value": 30}',
                                     '{"sensor": "s1", "value": 11}'])
    pipeline.run_update()
    second = alerts.read_records_to_list()
    assert sorted((r.value["sensor"], r.value["doubled"], r.batch_id) for r in second) == [
        ("s1", 22, 1), ("s3", 60, 1)]
    assert alerts.is_empty()
    # Spark wrote them where the sink's path says, as JSON files its log names.
    assert (exported / "_spark_metadata").is_dir()


def test_two_streaming_flows_into_one_file_sink_are_refused_with_the_fix(topology_driver,
                                                                        tmp_path):
    with pytest.raises(PipelineHazardError, match=r"flows current, legacy all write sink "
                       r"exported \(parquet\).*give each flow a sink of its own"):
        topology_driver.from_pipeline(PIPELINES / "two_flows_sink", file_inputs=TWO_FLOWS,
                                      configuration={"out.path": str(tmp_path / "out")})
