"""Scenario files: validation errors name the file, line and field (no Spark needed)."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import pytest

from pyspark_streamtest.gates.scenario import ScenarioError, load_scenario, parse_duration

GOOD = """\
name: ok
topology: pyspark_streamtest.gates.canned:clicks_per_user
start_time: 2024-01-01T00:00:00Z
steps:
  - pipe:
      topic: clicks
      records:
        - {value: {user: a, url: /}, timestamp: +1s}
  - advance_wall_clock: 1m30s
  - advance_watermark_to: 2024-01-01T00:01:00Z
  - restart
  - process
  - expect: {topic: counts, values: []}
"""


def write(tmp_path, text, name="s.streamtest.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_file_loads_into_steps(tmp_path):
    scenario = load_scenario(write(tmp_path, GOOD))
    assert scenario.name == "ok"
    assert [s.kind for s in scenario.steps] == [
        "pipe", "advance_wall_clock", "advance_watermark_to", "restart", "process", "expect"]
    assert [s.line for s in scenario.steps] == [5, 9, 10, 11, 12, 13]
    (record,) = scenario.steps[0].args["records"]
    assert record.timestamp == datetime(2024, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    assert scenario.steps[1].args["delta"] == timedelta(seconds=90)
    assert scenario.steps[2].args["to"] == datetime(2024, 1, 1, 0, 1, tzinfo=timezone.utc)


# The documented mistakes: an edit of GOOD, and the start of the error it gives.
# test_scenario_schema.py checks that the JSON Schema refuses each of them too.
MISTAKES = [
    (("        - {value: {user: a, url: /}, timestamp: +1s}", "        - {key: a}"),
     "s.streamtest.yaml:8: steps[0].pipe.records[0]: 'value' is required"),
    (("advance_wall_clock: 1m30s", "advance_wall_clock: soon"),
     "s.streamtest.yaml:9: steps[1].advance_wall_clock: 'soon' is not a duration"),
    (("2024-01-01T00:01:00Z", "2024-01-01T00:01:00"),
     "s.streamtest.yaml:10: steps[2].advance_watermark_to.to: 2024-01-01T00:01:00 has no time zone"),
    (("  - restart", "  - rewind"),
     "s.streamtest.yaml:11: steps[3]: unknown step 'rewind'"),
    (("values: []", "vals: []"),
     "s.streamtest.yaml:13: steps[5].expect.vals: unknown argument"),
    (("timestamp: +1s", "timestamp: yesterday"),
     "s.streamtest.yaml:8: steps[0].pipe.records[0].timestamp: 'yesterday' is not a time"),
    (("name: ok", "nmae: ok"), "s.streamtest.yaml:1: nmae: unknown field"),
    (("topology: pyspark_streamtest.gates.canned:clicks_per_user", "topology: no_colon"),
     "s.streamtest.yaml:2: topology: 'no_colon' must be 'module:function'"),
    (("      topic: clicks\n", "      topic: clicks\n      topic: again\n"),
     "s.streamtest.yaml:7: steps[0].pipe.topic: given twice"),
    (("  - process", "  - process: [1"), "s.streamtest.yaml:13: not valid YAML"),
    (("  - process", "  - process: now"),
     "s.streamtest.yaml:12: steps[4].process: 'process' takes no arguments"),
    (("values: []", "values: [], table: {}"),
     "s.streamtest.yaml:13: steps[5].expect: give exactly one of 'values', 'key_values'"),
    (("  - restart", "  - expect_state_rows: {total: -1}"),
     "s.streamtest.yaml:11: steps[3].expect_state_rows.total: must be a whole number >= 0"),
    (("  - restart", "  - expect_late: {output: counts}"),
     "s.streamtest.yaml:11: steps[3].expect_late: 'count' is required"),
    (("start_time: 2024-01-01T00:00:00Z", "inputs: {clicks: {value_serde: json}}"),
     "s.streamtest.yaml:3: inputs.clicks.value_serde: unknown; use key_serializer"),
]


@pytest.mark.parametrize(("edit", "where"), MISTAKES)
def test_errors_give_file_line_and_field(tmp_path, edit, where):
    old, new = edit
    assert old in GOOD
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, GOOD.replace(old, new)))
    assert str(caught.value).startswith(where), str(caught.value)
    assert caught.value.file == "s.streamtest.yaml"
    assert caught.value.line == int(where.split(":")[1])


def test_json_files_are_read_with_lines_too(tmp_path):
    text = '{\n  "topology": "m:f",\n  "steps": [\n    "process",\n    {"expect": {"topic": "t"}}\n  ]\n}\n'
    with pytest.raises(ScenarioError, match=r"^s\.streamtest\.json:5: steps\[1\]\.expect: give exactly one of"):
        load_scenario(write(tmp_path, text, "s.streamtest.json"))


def test_every_mistake_of_a_file_is_reported_at_once(tmp_path):
    text = (GOOD.replace("        - {value: {user: a, url: /}, timestamp: +1s}",
                         "        - {key: a, timestamp: +1s}")
            .replace("advance_wall_clock: 1m30s", "advance_wall_clock: soon")
            .replace("  - restart", "  - rewind"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, text))
    assert str(caught.value).splitlines() == [
        "s.streamtest.yaml:8: steps[0].pipe.records[0]: 'value' is required "
        "(null for a tombstone)",
        "s.streamtest.yaml:9: steps[1].advance_wall_clock: 'soon' is not a duration; "
        "write e.g. 500ms, 1s, 2m, 1h or 1m30s",
        "s.streamtest.yaml:11: steps[3]: unknown step 'rewind'; steps are "
        "advance_wall_clock, advance_watermark_to, expect, expect_late, "
        "expect_state_rows, expect_watermark, pipe, process, restart",
    ]
    error = caught.value
    assert (error.file, error.line, error.field) == (
        "s.streamtest.yaml", 8, "steps[0].pipe.records[0]")
    assert [(e.line, e.field) for e in error.errors] == [
        (8, "steps[0].pipe.records[0]"), (9, "steps[1].advance_wall_clock"),
        (11, "steps[3]")]
    assert error.errors[1].reason.startswith("'soon' is not a duration")
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) and len(back.errors) == 3


def test_errors_are_listed_in_the_file_s_order_with_the_key_s_line(tmp_path):
    text = ("steps:\n"
            "  - expect:\n"
            "      values: []\n"
            "      topic: 3\n"
            "name: 5\n"
            "nmae: x\n"
            "name: again\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, text))
    assert [str(e) for e in caught.value.errors] == [
        "s.streamtest.yaml:4: steps[0].expect.topic: must be a non-empty string",
        "s.streamtest.yaml:5: name: must be a string",
        "s.streamtest.yaml:6: nmae: unknown field; known: description, inputs, name, "
        "outputs, start_time, steps, topology, trigger_interval",
        "s.streamtest.yaml:7: name: given twice",
    ]


def test_a_file_needs_steps(tmp_path):
    with pytest.raises(ScenarioError, match="'steps' must be a non-empty list"):
        load_scenario(write(tmp_path, "name: x\n"))
    with pytest.raises(ScenarioError, match="the file is empty"):
        load_scenario(write(tmp_path, ""))


@pytest.mark.parametrize(("text", "expected"), [
    ("500ms", timedelta(milliseconds=500)), ("1s", timedelta(seconds=1)),
    ("2m", timedelta(minutes=2)), ("1h30m", timedelta(minutes=90)), ("1d", timedelta(days=1)),
])
def test_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "1", "s", "1.5s", "1x", 5, "1s2"])
def test_bad_durations_say_how_to_write_one(text):
    with pytest.raises(ValueError, match=r"is not a duration; write e\.g\. 500ms"):
        parse_duration(text)


def test_safe_file_name_keeps_only_portable_characters():
    from pyspark_streamtest.core.files import safe_file_name

    assert safe_file_name("tests/a_test.py::test_x[ü 1]") == "tests_a_test.py__test_x___1"
    assert safe_file_name("__") == "_"
    assert len(safe_file_name("x" * 400)) == 150
