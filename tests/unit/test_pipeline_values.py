"""The parts of PipelineTestDriver that are plain logic, without Spark: a streaming
table's commit log as Spark's file sink writes it, the graph's hazards, an update read
from the engine's events, the update timeline, and file landing's refusals."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from pyspark_streamtest.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnknownDatasetError,
)
from pyspark_streamtest.pipelines._commit_log import read_commit_log
from pyspark_streamtest.pipelines._graph import graph_from
from pyspark_streamtest.pipelines._inputs import FileInputs
from pyspark_streamtest.pipelines._updates import format_updates, read_update


def _entry(folder, name, files, *, deleted=()):
    lines = ["v1"] + [json.dumps({"path": f"file://{folder}/{f}", "action": "add"})
                      for f in files]
    lines += [json.dumps({"path": f"file://{folder}/{f}", "action": "delete"}) for f in deleted]
    (folder / "_spark_metadata" / name).write_text("\n".join(lines))


def _table(tmp_path, files):
    (tmp_path / "_spark_metadata").mkdir()
    for name in files:
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def test_each_batch_adds_its_files_and_a_file_no_entry_names_is_an_orphan(tmp_path):
    folder = _table(tmp_path, ["part-a", "part-b", "part-c", "part-lost"])
    _entry(folder, "0", ["part-a"])
    _entry(folder, "1", ["part-b", "part-c"])
    log = read_commit_log(folder)
    assert log.batches == {0: (f"{folder}/part-a",),
                           1: (f"{folder}/part-b", f"{folder}/part-c")}
    assert log.visible == {f"{folder}/part-a", f"{folder}/part-b", f"{folder}/part-c"}
    assert log.orphans == (f"{folder}/part-lost",)


def test_a_compact_entry_counts_only_the_files_not_known_before(tmp_path):
    folder = _table(tmp_path, ["part-a", "part-b", "part-c"])
    _entry(folder, "8", ["part-a"])
    first = read_commit_log(folder)
    # Spark compacts every tenth batch: entry 9 repeats every file before it, and the
    # plain entries before it may be deleted.
    (folder / "_spark_metadata" / "8").unlink()
    _entry(folder, "9.compact", ["part-a", "part-b", "part-c"], deleted=["part-c"])
    log = read_commit_log(folder, first.visible)
    assert log.batches == {9: (f"{folder}/part-b", f"{folder}/part-c")}
    assert log.visible == {f"{folder}/part-a", f"{folder}/part-b"}
    assert log.orphans == (f"{folder}/part-c",)


def test_a_table_not_written_yet_has_an_empty_log(tmp_path):
    log = read_commit_log(tmp_path / "nothing")
    assert (log.batches, log.visible, log.orphans) == ({}, frozenset(), ())


def _described(flows, tables=(("orders", True, None),)):
    return {
        "tables": [{"name": f"c.db.{n}", "streaming": s, "format": f} for n, s, f in tables],
        "views": [], "sinks": [],
        "flows": [{"name": f"c.db.{name}", "target": f"c.db.{target}", "once": once,
                   "streaming": streaming, "inputs": [], "file_sources": ["/in"],
                   "watermarks": [], "stateful": []}
                  for name, target, streaming, once in flows],
    }


def _short(name):
    return name.removeprefix("c.db.")


@pytest.mark.parametrize(("flows", "tables", "hazard"), [
    pytest.param([("a", "orders", True, False), ("b", "orders", True, False)],
                 [("orders", True, None)], ("a", "b"), id="two-streaming-flows-parquet"),
    pytest.param([("a", "orders", True, False), ("b", "orders", True, False)],
                 [("orders", True, "json")], ("a", "b"), id="two-streaming-flows-json"),
    pytest.param([("a", "orders", True, False)], [("orders", True, None)], None,
                 id="one-flow"),
    pytest.param([("a", "orders", True, False), ("b", "orders", True, True)],
                 [("orders", True, None)], None, id="a-once-backfill-beside"),
    pytest.param([("a", "orders", True, False), ("b", "orders", True, False)],
                 [("orders", True, "delta")], None, id="transactional-format"),
])
def test_a_file_table_written_by_two_streaming_flows_is_a_hazard(flows, tables, hazard):
    graph = graph_from(_described(flows, tables), _short)
    if hazard is None:
        assert graph.hazards == ()
    else:
        (found,) = graph.hazards
        assert (found.kind, found.dataset, found.flows) == ("shared_commit_log", "orders",
                                                            hazard)
        assert "give each flow a table of its own" in found.text
    assert graph.datasets["orders"].flows == tuple(sorted(f[0] for f in flows))


def _progress(name, batch, rows, *, watermark=None, state=None, start=None, end=None):
    progress = {"name": name, "batchId": batch, "numInputRows": rows,
                "sources": [{"startOffset": start, "endOffset": end}]}
    if watermark:
        progress["eventTime"] = {"watermark": watermark}
    if state is not None:
        progress["stateOperators"] = [{"numRowsTotal": state, "numRowsDroppedByWatermark": 1}]
    return ("P", "q1", json.dumps(progress))


def test_an_update_is_read_from_the_engine_s_events_flow_by_flow():
    messages = ["Flow c.db.orders is QUEUED.", "Flow c.db.orders is STARTING.",
                "Flow c.db.orders is RUNNING.", "Flow c.db.orders has COMPLETED.",
                "Flow 'c.db.totals' has FAILED more than 0 times and will not be restarted."
                "\nError: [STREAM_FAILED] boom\n[CAUSE_CLASS] the cause"]
    events = [("S", "q1", "c.db.orders"),
              _progress("c.db.orders", 0, 3, watermark="1970-01-01T00:00:00.000Z", state=2,
                        end='{"logOffset":0}'),
              _progress("c.db.orders", 1, 0, watermark="2024-01-01T00:07:00.000Z", state=2,
                        start='{"logOffset":0}', end='{"logOffset":0}')]
    update = read_update(2, messages, events, _short)
    assert update.state == "FAILED"  # no run event: the flows say
    assert update.failed_flows == ("totals",)
    assert update.flows["totals"].errors == ("[STREAM_FAILED] boom\n[CAUSE_CLASS] the cause",)
    orders = update.flows["orders"]
    assert (orders.state, orders.attempts) == ("COMPLETED", 1)
    assert [(b.batch_id, b.input_rows, b.offered, b.state_rows, b.late_rows)
            for b in orders.batches] == [(0, 3, True, 2, 1), (1, 0, False, 2, 1)]
    assert orders.batches[1].watermark == datetime(2024, 1, 1, 0, 7, tzinfo=timezone.utc)
    assert format_updates([update]) == (
        "update 2: FAILED\n"
        "  orders  batch 0: 3 rows in, watermark 1970-01-01T00:00:00Z, state 2, 1 late\n"
        "          batch 1: no data, watermark 2024-01-01T00:07:00Z, state 2, 1 late"
        "  (COMPLETED)\n"
        "  totals  FAILED")
    assert format_updates([]) == "(no update run)"


def test_landing_refuses_what_spark_s_file_source_would_misread(tmp_path):
    inputs = FileInputs(tmp_path, {"orders": "orders.path"})
    assert inputs.configuration == {"orders.path": str(tmp_path / "orders")}
    path = inputs.land_lines("orders", ['{"a": 1}'], None)
    assert path.endswith("part-00000")
    assert (tmp_path / "orders" / "part-00000").read_text() == '{"a": 1}\n'
    assert not list((tmp_path / "orders").glob(".*"))  # landed whole, under its name
    with pytest.raises(InvalidArgumentError, match="landed already"):
        inputs.land_file("orders", "part-00000", "x")
    with pytest.raises(InvalidArgumentError, match="no folders"):
        inputs.land_file("orders", "a/b", "x")
    with pytest.raises(InvalidArgumentTypeError, match="str or bytes"):
        inputs.land_file("orders", "b", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="each line is a str"):
        inputs.land_lines("orders", [1], None)  # type: ignore[list-item]
    with pytest.raises(UnknownDatasetError, match=r"inputs are \['orders'\]"):
        inputs.path("clicks")
    with pytest.raises(InvalidArgumentError, match="configuration key"):
        FileInputs(tmp_path / "x", {"a": ""})


@pytest.mark.parametrize(("fmt", "options", "hazard"), [
    pytest.param("parquet", {"path": "/out"}, True, id="parquet-with-path"),
    pytest.param("json", {"path": "file:/out"}, True, id="json-with-path"),
    pytest.param("console", {}, False, id="console"),
    pytest.param("parquet", {}, False, id="no-path"),
])
def test_a_file_sink_written_by_two_streaming_flows_is_a_hazard(fmt, options, hazard):
    described = _described([("a", "out", True, False), ("b", "out", True, False)], ())
    described["sinks"] = [{"name": "c.db.out", "format": fmt, "options": options}]
    graph = graph_from(described, _short)
    sink = graph.datasets["out"]
    assert (sink.kind, sink.format, sink.path, sink.flows) == (
        "sink", fmt, options.get("path"), ("a", "b"))
    assert sink.file_written is hazard
    assert [(h.kind, h.dataset, h.flows) for h in graph.hazards] == (
        [("shared_commit_log", "out", ("a", "b"))] if hazard else [])
    if hazard:
        assert "all write sink out" in graph.hazards[0].text
        assert "give each flow a sink of its own" in graph.hazards[0].text
