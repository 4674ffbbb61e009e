"""File inputs that land files: Spark's own file source reads what the test lands, with
the job's reader options. Every batch is checked against Spark alone reading the same
files from a real directory with the same options: ``spark.read`` of each batch's files,
or, where Spark decides which files a batch takes (``maxFilesPerTrigger``), a bare
streaming query over a real directory with Spark's own ``ManualClock`` and
``MemorySink``."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from pyspark_streamtest import (
    IncompatibleCheckpointError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StreamingQueryFailedError,
    Topology,
    TopologyError,
    TopologyTestDriver,
    UnsupportedAppCallError,
)
from pyspark_streamtest._spark.alone import AloneQuery
from pyspark_streamtest._spark.jvm import Jvm
from pyspark_streamtest.driver import oracle as oracle_module
from pyspark_streamtest.testing.strategies import (
    Drain,
    Event,
    EventRow,
    Pipe,
    Schedule,
    Tick,
    run_schedule,
)
from tests.helpers import T0, at

Files = Sequence[tuple[str, str | bytes]]
"""(file name, contents) landed in one step."""

JSON = "id INT, name STRING"
JSON_CORRUPT = "id INT, name STRING, _corrupt_record STRING"
LANDING = "s3a://landing/events/"


def reading(source_format: str, schema: str | None, options: Mapping[str, str]):
    """A production job: a file source read with ``options``, written to a memory sink."""
    def main(spark: SparkSession) -> None:
        reader = spark.readStream.format(source_format).options(**options)
        if schema is not None:
            reader = reader.schema(schema)
        reader.load(LANDING).writeStream.format("memory").queryName("parsed").start()
    return main


def rows_of(rows: Sequence[Row] | Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Rows as dicts, in a stable order (Spark promises no order within a batch)."""
    found = [row.asDict(recursive=True) if isinstance(row, Row) else dict(row)
             for row in rows]
    return sorted(found, key=repr)


def driver_batches(topology_driver, source_format: str, schema: str | None,
                   options: Mapping[str, str], steps: Sequence[Files]):
    """Each step's files landed, then one trigger: (rows, names of the files read) of
    the batch each step ran."""
    driver = topology_driver.from_app(reading(source_format, schema, options),
                                      land_files=True)
    events = driver.create_input_topic("events")
    seen = []
    for files in steps:
        for name, contents in files:
            assert events.land_file(name, contents) == name
        [batch] = driver.advance_wall_clock(timedelta(seconds=1))
        seen.append((rows_of(batch.output_values),
                     [record.key for record in batch.input_records]))
    return seen


def spark_alone(spark: SparkSession, folder: Path, source_format: str, schema: str | None,
                options: Mapping[str, str], steps: Sequence[Files]):
    """Spark alone: each step's files written to a real directory and read with
    ``spark.read`` and the same format, schema and options: (rows, names) per step."""
    folder.mkdir()
    seen = []
    for files in steps:
        paths = []
        for name, contents in files:
            data = contents.encode("utf-8") if isinstance(contents, str) else contents
            (folder / name).write_bytes(data)
            paths.append(str(folder / name))
        reader = spark.read.format(source_format).options(**options)
        if schema is not None:
            reader = reader.schema(schema)
        seen.append((rows_of(reader.load(paths).collect()), [name for name, _ in files]))
    return seen


@pytest.mark.parametrize(("schema", "options", "steps"), [
    pytest.param(JSON_CORRUPT, {"mode": "PERMISSIVE"}, [
        [("a.json", '{"id":1,"name":"ann"}\n{"id":2,"name":\n{"id":"x","name":"bo"}\n')],
        [("b.json", '{"id":3,"name":"cy"}\nnot json\n')],
    ], id="permissive-keeps-the-line-in-the-corrupt-record-column"),
    pytest.param(JSON, {"mode": "PERMISSIVE"}, [
        [("a.json", '{"id":1,"name":"ann"}\n{"id":2,"name":\n{"id":"x","name":"bo"}\n')],
    ], id="permissive-without-the-column-gives-nulls"),
    pytest.param("id INT, name STRING, bad STRING",
                 {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "bad"}, [
        [("a.json", '{"id":1,"name":"ann"}\n{"id":\n')],
    ], id="permissive-with-a-corrupt-record-column-of-its-own-name"),
    pytest.param(JSON_CORRUPT, {"mode": "DROPMALFORMED"}, [
        [("a.json", '{"id":1,"name":"ann"}\n{"id":2,"name":\n{"id":3,"name":"cy"}\n')],
    ], id="dropmalformed-drops-the-line"),
    pytest.param(JSON, {"multiLine": "true"}, [
        [("a.json", '[{"id": 1,\n  "name": "ann"},\n {"id": 2,\n  "name": "bo"}]\n')],
        [("b.json", '{\n  "id": 3,\n  "name": "cy"\n}\n')],
    ], id="multiline-json-is-one-file"),
    pytest.param(JSON_CORRUPT, {}, [
        [("a.json", '{"id":1,"name":"ann"}\n{"id":2,"name":"bo"}')],
        [("b.json", '{"id":3,"name":"cy"}\n{"id":4,"na')],
    ], id="a-partial-last-line"),
    pytest.param(JSON, {}, [
        [("a.json", '{"id":7,"name":"same"}\n'),
         ("b=1+x@y,z.json", '{"id":7,"name":"same"}\n')],
        [("c.json", '{"id":7,"name":"same"}\n')],
    ], id="the-same-record-in-two-files"),
])
def test_json_files_parse_as_spark_alone_parses_them(topology_driver, spark, tmp_path,
                                                     schema, options, steps):
    ours = driver_batches(topology_driver, "json", schema, options, steps)
    theirs = spark_alone(spark, tmp_path / "alone", "json", schema, options, steps)
    assert [sorted(names) for _, names in ours] == [sorted(n) for _, n in theirs]
    assert [rows for rows, _ in ours] == [rows for rows, _ in theirs]


@pytest.mark.parametrize(("source_format", "schema", "options", "steps"), [
    pytest.param("csv", JSON, {"header": "true"}, [
        [("a.csv", "id,name\n1,ann\n2,bo\n")],
        [("b.csv", "id,name\n3,cy\nfour,dee\n")],
    ], id="csv-with-a-header"),
    pytest.param("csv", JSON, {"header": "true", "mode": "DROPMALFORMED"}, [
        [("a.csv", "id,name\n1,ann\nfour,dee\n5\n")],
    ], id="csv-dropmalformed"),
    pytest.param("text", None, {}, [
        [("a.log", "first line\nsecond line")],
        [("b.log", "\nthird\n")],
    ], id="text-lines"),
    pytest.param("json", JSON, {}, [
        [("a.json.gz", gzip.compress(b'{"id":1,"name":"ann"}\n{"id":2}\n', mtime=0))],
    ], id="gzip-by-its-name"),
    pytest.param("text", None, {"wholetext": "true"}, [
        [("a.log", "first line\nsecond line\n")],
    ], id="text-whole-files"),
])
def test_other_formats_parse_as_spark_alone_parses_them(topology_driver, spark, tmp_path,
                                                        source_format, schema, options,
                                                        steps):
    ours = driver_batches(topology_driver, source_format, schema, options, steps)
    theirs = spark_alone(spark, tmp_path / "alone", source_format, schema, options, steps)
    assert ours == theirs


def _error_classes(text: str) -> set[str]:
    return set(re.findall(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", text))


def test_failfast_fails_the_batch_with_sparks_error(topology_driver, spark, tmp_path):
    options = {"mode": "FAILFAST"}
    good = ("a.json", '{"id":1,"name":"ann"}\n')
    bad = ("b.json", '{"id":2,"name":"bo"}\n{"id":3,"name":\n')
    driver = topology_driver.from_app(reading("json", JSON, options), land_files=True)
    events = driver.create_input_topic("events")
    events.land_file(*good)
    driver.advance_wall_clock(timedelta(seconds=1))
    events.land_file(*bad)
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.advance_wall_clock(timedelta(seconds=1))
    assert failed.value.batch_id == 1
    assert [(r.key, r.value) for r in failed.value.records] == [bad]
    assert "failed in batch 1 (it read 1 record of input 'events')" in str(failed.value)

    alone = tmp_path / "b.json"
    alone.write_text(bad[1])
    with pytest.raises(Exception) as spark_failed:
        spark.read.format("json").options(**options).schema(JSON).load(str(alone)).collect()
    expected = _error_classes(str(spark_failed.value))
    assert {"FAILED_READ_FILE.NO_HINT", "MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION"
            } <= expected
    assert expected <= _error_classes(failed.value.cause)

    # Spark's recovery retries batch 1 with the same files: it fails again
    with pytest.raises(StreamingQueryFailedError) as again:
        driver.restart()
    assert again.value.batch_id == 1
    assert [r.key for r in again.value.records] == ["b.json"]


def test_no_landed_file_is_named_as_the_culprit_and_the_note_says_why(topology_driver):
    driver = topology_driver.from_app(reading("json", JSON, {"mode": "FAILFAST"}),
                                      land_files=True)
    events = driver.create_input_topic("events")
    events.land_file("good.json", '{"id":1}\n')
    events.land_file("bad.json", '{"id":\n')
    with pytest.raises(StreamingQueryFailedError) as failed:
        driver.advance_wall_clock(timedelta(seconds=1))
    assert failed.value.culprit is None
    assert failed.value.culprit_note == (
        "the batch read landed files ('good.json', 'bad.json'), and a replay of the batch "
        "cannot feed a file's rows: Spark's error names the file that failed")
    assert "bad.json" in failed.value.cause


def test_a_fixed_reader_resumes_with_the_failed_batch_s_files(topology_driver):
    """Fix and resume: the next version of the job reads the files of the failed batch
    (Spark's file log in the checkpoint holds them) with its own reader options."""
    driver = topology_driver.from_app(reading("json", JSON_CORRUPT, {"mode": "FAILFAST"}),
                                      land_files=True)
    driver.create_input_topic("events").land_file("a.json", '{"id":1}\n{"id":\n')
    with pytest.raises(StreamingQueryFailedError):
        driver.advance_wall_clock(timedelta(seconds=1))
    [batch] = driver.restart(app=reading("json", JSON_CORRUPT, {"mode": "PERMISSIVE"}))
    assert batch.batch_id == 0
    assert [r.key for r in batch.input_records] == ["a.json"]
    assert rows_of(batch.output_values) == [
        {"id": 1, "name": None, "_corrupt_record": None},
        {"id": None, "name": None, "_corrupt_record": '{"id":'},
    ]


def spark_alone_streaming(spark: SparkSession, folder: Path, schema: str,
                          options: Mapping[str, str], files: Sequence[tuple[str, str]],
                          batches: int) -> list[list[dict[str, object]]]:
    """Spark alone: ``files`` written to a real directory, modified 1 ms apart in order,
    read by a streaming query (Spark's JVM ``ManualClock``, ``MemorySink``) with the
    same reader; the rows of each of its first ``batches`` batches."""
    classic = spark if isinstance(spark, SparkSession) else SparkSession._instantiatedSession
    assert classic is not None
    folder.mkdir()
    frame = classic.readStream.format("json").options(**options).schema(schema).load(
        str(folder))
    query = AloneQuery(Jvm(classic), frame, name=f"alone-{folder.name}",
                       checkpoint=str(folder.parent / "alone-checkpoint"),
                       output_mode="append", start_ms=0, timeout_s=60)
    try:
        assert query.await_first_trigger() is None  # an empty directory: no batch
        for offset, (name, contents) in enumerate(files):
            (folder / name).write_text(contents, encoding="utf-8")
            modified_ns = (int(T0.timestamp() * 1000) + offset) * 1_000_000
            os.utime(folder / name, ns=(modified_ns, modified_ns))
        found = []
        for batch_id in range(batches):
            query.run_trigger_at(1000 * (batch_id + 1), batch_id)
            found.append(rows_of(query.batch_rows()))
        return found
    finally:
        query.stop()


@pytest.mark.parametrize("step", ["process_all_available", "advance_wall_clock"])
def test_max_files_per_trigger_splits_the_landed_files_as_spark_does(
        topology_driver, spark, tmp_path, step):
    options = {"maxFilesPerTrigger": "2"}
    # landed in this order; Spark takes new files by modification time, not by name
    files = [(f"{name}.json", f'{{"id":{n},"name":"{name}"}}\n')
             for n, name in enumerate(["e", "d", "c", "b", "a"])]
    driver = topology_driver.from_app(reading("json", JSON, options), land_files=True)
    events = driver.create_input_topic("events")
    for name, contents in files:
        events.land_file(name, contents)
    if step == "process_all_available":
        ran = driver.process_all_available()
    else:
        ran = driver.advance_wall_clock(timedelta(seconds=5))
        assert [b.processing_time for b in ran] == [T0 + timedelta(seconds=s)
                                                      for s in (1, 2, 3)]
    theirs = spark_alone_streaming(spark, tmp_path / "alone", JSON, options, files, 3)
    assert [rows_of(b.output_values) for b in ran] == theirs
    assert [[r.key for r in b.input_records] for b in ran] == [
        [f"{row['name']}.json" for row in batch] for batch in theirs]
    assert [len(b) for b in theirs] == [2, 2, 1]


def test_restart_keeps_the_landed_files_and_reads_only_new_ones(topology_driver):
    driver = topology_driver.from_app(reading("json", JSON, {"maxFilesPerTrigger": "1"}),
                                      land_files=["events"])
    events = driver.create_input_topic("events")
    events.land_file("a.json", '{"id":1}\n')
    events.land_file("b.json", '{"id":2}\n')
    [first] = driver.advance_wall_clock(timedelta(seconds=1))
    driver.stop()
    events.land_lines(['{"id":3}'])  # landed while stopped: read after the start
    ran = driver.start()  # Spark's first trigger on start reads the next file
    ran += driver.process_all_available()
    assert [[r.key for r in b.input_records] for b in [first, *ran]] == [
        ["a.json"], ["b.json"], ["part-00002.json"]]
    assert [b.output_values for b in [first, *ran]] == [
        [{"id": 1, "name": None}], [{"id": 2, "name": None}], [{"id": 3, "name": None}]]
    assert driver.process_all_available() == []


def test_spark_refuses_a_saved_checkpoint_in_a_new_driver_s_directory(
        topology_driver, tmp_path):
    """Spark's file log in the checkpoint names the files read by their paths; a driver
    made from the saved checkpoint lands into a directory of its own, and Spark, reading
    the last batch's files again on start, refuses them as outside the source's path
    (as it would a production directory moved under a checkpoint)."""
    job = reading("json", JSON, {})
    driver = topology_driver.from_app(job, land_files=True)
    driver.create_input_topic("events").land_file("a.json", '{"id":1}\n')
    driver.advance_wall_clock(timedelta(seconds=1))
    driver.save_checkpoint(tmp_path / "saved")
    with pytest.raises(IncompatibleCheckpointError, match="Wrong basePath") as refused:
        topology_driver.from_app(job, land_files=True, checkpoint=tmp_path / "saved")
    assert refused.value.change.startswith("a file source's directory changed")


def test_the_oracle_compares_the_batches_of_landed_files(topology_driver, monkeypatch):
    """With the differential oracle on, Spark alone's query reads the same landing
    directory from its own checkpoint, and each batch is compared with the driver's."""
    monkeypatch.setenv(oracle_module.ORACLE_ENV, "1")
    before = oracle_module.STATS.batches
    driver = topology_driver.from_app(reading("json", JSON_CORRUPT, {"maxFilesPerTrigger": 1}),
                                      land_files=True)
    events = driver.create_input_topic("events")
    events.land_lines(['{"id":1}', "{"])
    events.land_lines(['{"id":2}'])
    assert len(driver.process_all_available()) == 2
    assert oracle_module.STATS.batches - before == 2


def test_a_topology_declares_a_file_input_beside_an_input_of_rows(topology_driver):
    def topology(t: Topology) -> None:
        landed = t.file_input("landed", format="csv", schema="user STRING, n INT",
                              options={"header": True})
        piped = t.input("piped", schema="user STRING, n INT")
        t.output("all", landed.unionByName(piped).groupBy("user").agg(F.sum("n").alias("n")),
                 output_mode="complete")

    driver = topology_driver(topology)
    landed = driver.create_input_topic("landed")
    landed.land_lines(["user,n", "ann,1", "bo,2"], name="one.csv")
    driver.create_input_topic("piped").pipe_input({"user": "ann", "n": 10})
    [batch] = driver.advance_wall_clock(timedelta(seconds=1))
    assert rows_of(batch.output_values) == [{"user": "ann", "n": 11}, {"user": "bo", "n": 2}]
    assert sorted((r.topic, r.key) for r in batch.input_records) == [
        ("landed", "one.csv"), ("piped", None)]
    [record] = [r for r in batch.input_records if r.topic == "landed"]
    assert record.value == "user,n\nann,1\nbo,2\n" and record.timestamp == T0


def test_two_queries_read_one_landing_directory(topology_driver):
    def job(spark: SparkSession) -> None:
        events = spark.readStream.schema(JSON).json(LANDING)
        events.writeStream.format("memory").queryName("all").start()
        events.where("id > 1").writeStream.format("memory").queryName("big").start()

    driver = topology_driver.from_app(job, land_files=True)
    driver.create_input_topic("events").land_lines(['{"id":1}', '{"id":2}'])
    ran = driver.advance_wall_clock(timedelta(seconds=1))
    assert {b.output: [r["id"] for r in b.output_values] for b in ran} == {
        "all": [1, 2], "big": [2]}
    assert [[r.key for r in b.input_records] for b in ran] == [["part-00000.json"]] * 2


def test_close_and_reset_delete_the_landed_files(topology_driver):
    driver = topology_driver.from_app(reading("json", JSON, {}), land_files=True)
    events = driver.create_input_topic("events")
    events.land_file("a.json", '{"id":1}\n')
    folder = Path(events._spec.files.landing.path)  # type: ignore[union-attr]
    assert os.listdir(folder) == ["a.json"]
    driver.advance_wall_clock(timedelta(seconds=1))
    driver.reset()
    assert os.listdir(folder) == []  # an empty directory again: a new run
    events = driver.create_input_topic("events")
    events.land_file("a.json", '{"id":5}\n')  # the same name: a new run's file
    [batch] = driver.advance_wall_clock(timedelta(seconds=1))
    assert (batch.batch_id, batch.output_values) == (0, [{"id": 5, "name": None}])
    driver.close()
    assert not folder.exists() and not folder.parent.exists()


def test_late_records_of_a_query_reading_landed_files_are_refused(topology_driver):
    def job(spark: SparkSession) -> None:
        (spark.readStream.schema("id INT, ts TIMESTAMP").json(LANDING)
         .withWatermark("ts", "10 seconds").groupBy(F.window("ts", "10 seconds")).count()
         .writeStream.format("memory").queryName("counts").outputMode("append").start())

    driver = topology_driver.from_app(job, land_files=True)
    driver.create_input_topic("events").land_file(
        "a.json", '{"id":1,"ts":"2024-01-01T00:00:30Z"}\n{"id":2,"ts":"2024-01-01T00:00:01Z"}\n')
    driver.process_all_available()
    with pytest.raises(InvalidArgumentError, match="files landed in input 'events'"):
        driver.late_records("counts")
    assert driver.batches[0].late_records is None
    assert driver.batches[0].input_event_times is None


@pytest.mark.parametrize(("act", "error", "message"), [
    (lambda t: t.pipe_input({"id": 1}), InvalidArgumentTypeError,
     "input 'events' is a file input: it takes files, not rows"),
    (lambda t: t.pipe_value_list([(1, "a")]), InvalidArgumentTypeError, "is a file input"),
    (lambda t: t.pipe_empty_batch(), InvalidArgumentTypeError, "is a file input"),
    (lambda t: t.land_file("a/b.json", "{}"), InvalidArgumentError, "no folders"),
    (lambda t: t.land_file("a.json", 3), InvalidArgumentTypeError, "str or bytes, got int"),
    (lambda t: t.land_lines("{}"), InvalidArgumentTypeError, "an iterable of lines"),
    (lambda t: t.land_lines(["{}\n{}"]), InvalidArgumentError, "without line breaks"),
    (lambda t: [t.land_file("a.json", "{}"), t.land_file("a.json", "{}")],
     InvalidArgumentError, "landed already"),
], ids=["pipe_input", "pipe_value_list", "pipe_empty_batch", "folder", "contents",
        "one-string", "line-break", "same-name"])
def test_misuse_of_a_file_input(topology_driver, act, error, message):
    driver = topology_driver.from_app(reading("json", JSON, {}), land_files=True)
    with pytest.raises(error, match=re.escape(message)):
        act(driver.create_input_topic("events"))


def test_landing_into_an_input_of_rows_is_refused(topology_driver):
    driver = topology_driver.from_app(reading("json", JSON, {}))
    with pytest.raises(InvalidArgumentTypeError, match=r"from_app\(\.\.\., land_files="):
        driver.create_input_topic("events").land_file("a.json", "{}")


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"land_files": ["orders"]}, InvalidArgumentError,
     "names ['orders'], but the job reads no file source"),
    ({"land_files": "events"}, InvalidArgumentTypeError, "a list of input names"),
    ({"land_files": [1]}, InvalidArgumentTypeError, "takes input names (str)"),
])
def test_land_files_is_checked(topology_driver, options, error, message):
    with pytest.raises(error, match=re.escape(message)):
        topology_driver.from_app(reading("json", JSON, {}), **options)


def test_a_reader_spark_refuses_is_refused_with_its_message(topology_driver):
    with pytest.raises(UnsupportedAppCallError, match="Schema must be specified") as refused:
        topology_driver.from_app(reading("json", None, {}), land_files=True)
    assert "schemas={'s3a://landing/events/'" in str(refused.value)

    def delta(spark: SparkSession) -> None:
        spark.readStream.format("delta").load(LANDING).writeStream.format("noop").start()
    with pytest.raises(UnsupportedAppCallError, match="a Delta table"):
        topology_driver.from_app(delta, land_files=True, schemas={LANDING: "id INT"})

    def with_path(t: Topology) -> None:
        t.output("x", t.file_input("x", format="json", schema=JSON, options={"path": "/in"}))
    with pytest.raises(TopologyError, match="the input reads its own landing directory"):
        topology_driver(with_path)

    def rate(t: Topology) -> None:
        t.output("x", t.file_input("x", format="rate"))
    with pytest.raises(TopologyError, match="format 'rate' reads no files"):
        topology_driver(rate)


def test_rate_limits_are_spark_s_on_a_landing_input_and_refused_on_a_piped_one(
        topology_driver):
    job = reading("json", JSON, {"maxFilesPerTrigger": "1"})
    with pytest.raises(UnsupportedAppCallError, match="maxFilesPerTrigger"):
        topology_driver.from_app(job)
    assert topology_driver.from_app(job, land_files=True).input_names == ("events",)


def test_no_landing_directory_is_left_by_a_build_that_fails(topology_driver, spark,
                                                            monkeypatch):
    """The landing folders this build made are gone (those of this process only: other
    workers and Spark runs beside this one land files in the same temporary root)."""
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(*args, **kwargs):
        folder = mkdtemp(*args, **kwargs)
        if os.path.basename(folder).startswith("pyspark-streamtest-landing-"):
            made.append(folder)
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)

    def broken(t: Topology) -> None:
        t.file_input("x", format="json", schema=JSON)
        t.file_input("y", format="no-such-format", schema=JSON)

    with pytest.raises(TopologyError, match="Spark refused the reader"):
        TopologyTestDriver(broken, spark=spark)
    assert len(made) == 1 and not os.path.exists(made[0])


# --- schedules played into a file input ----------------------------------------------
def landed_rows(t: Topology) -> None:
    t.output("parsed", t.file_input("landed", format="json",
                                    schema="key STRING, n INT, ts TIMESTAMP",
                                    options={"mode": "DROPMALFORMED"}))


def test_a_schedule_lands_each_step_s_events_as_one_file_of_json_lines(topology_driver):
    """run_schedule lands a step's events for a file input as one file, a row that
    holds its time as one JSON line, which Spark's reader parses at the next trigger."""
    def row(key: str, n: int, seconds: int) -> Event:
        return Event(key, EventRow({"key": key, "n": n, "ts": at(seconds)}, time_column="ts"),
                     at(seconds))

    schedule = Schedule((Pipe((row("a", 1, 1), row("b", 2, 2)), input="landed"), Tick(),
                         Pipe((row("a", 3, 3),), input="landed"), Tick(), Drain()))
    batches = run_schedule(topology_driver(landed_rows), schedule, input=None,
                           output="parsed")
    assert [[(r.key, r.value) for r in b.input_records] for b in batches] == [
        [("part-00000.json", '{"key":"a","n":1,"ts":"2024-01-01T00:00:01+00:00"}\n'
                             '{"key":"b","n":2,"ts":"2024-01-01T00:00:02+00:00"}\n')],
        [("part-00001.json", '{"key":"a","n":3,"ts":"2024-01-01T00:00:03+00:00"}\n')]]
    assert [rows_of(b.output_values) for b in batches] == [
        [{"key": "a", "n": 1, "ts": at(1)}, {"key": "b", "n": 2, "ts": at(2)}],
        [{"key": "a", "n": 3, "ts": at(3)}]]


def test_to_record_gives_a_file_input_its_lines_a_str_as_it_is(topology_driver):
    """to_record's value is the line: a dict as JSON, a str as it is (a malformed line,
    which the reader's DROPMALFORMED drops); the record's key and time are not used."""
    def line(event: Event) -> tuple[str, object, datetime]:
        if event.value == "broken":
            return "ignored", '{"key": "x", "n": ', at(99)
        return "ignored", {"key": event.key, "n": int(event.value), "ts": event.timestamp}, at(99)

    schedule = Schedule((Pipe((Event("a", "1", at(1)), Event("b", "broken", at(2)),
                               Event("c", "3", at(3))), input="landed"), Tick()))
    [batch] = run_schedule(topology_driver(landed_rows), schedule, input=None,
                           output="parsed", to_record={"landed": line})
    assert [r.value.splitlines()[1] for r in batch.input_records] == ['{"key": "x", "n": ']
    assert rows_of(batch.output_values) == [{"key": "a", "n": 1, "ts": at(1)},
                                            {"key": "c", "n": 3, "ts": at(3)}]


@pytest.mark.parametrize(("to_record", "error", "message"), [
    (None, InvalidArgumentError, "input 'landed' is a file input, and the event a='1'@00:00:01 "
     "has no line of its own"),
    (lambda e: (None, 7, None), InvalidArgumentTypeError,
     "a file input's value is its line: a str, or a dict"),
    (lambda e: (None, "{}\n{}", None), InvalidArgumentError, "a line holds no line break"),
], ids=["no-line", "not-a-line", "line-break"])
def test_a_schedule_s_event_without_a_line_is_refused(topology_driver, to_record, error,
                                                      message):
    schedule = Schedule((Pipe((Event("a", "1", at(1)),), input="landed"), Tick()))
    driver = topology_driver(landed_rows)
    with pytest.raises(error, match=re.escape(message)):
        run_schedule(driver, schedule, input=None, output="parsed",
                     to_record=None if to_record is None else {"landed": to_record})
    assert driver.batches == ()  # nothing landed, nothing ran
