"""Scenario files' ``expect`` with rtol, atol and ignore_columns: the loader, the JSON
Schema, and the step run on a stand-in driver (no Spark: the topics read queues filled
by hand)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pyspark_streamtest import OutputMismatchError
from pyspark_streamtest.core.records import TestRecord
from pyspark_streamtest.driver.queries._history import History
from pyspark_streamtest.driver.topics.output_topic import OutputLink, TestOutputTopic
from pyspark_streamtest.errors import InvalidArgumentError
from pyspark_streamtest.gates.scenario import ScenarioError, _Runner, load_scenario

from .test_scenario_schema import as_editors_see_it, validator

TOLERANT = """\
steps:
  - process
  - expect:
      topic: averages
      values: [{user: a, avg: 0.3}]
      rtol: 1e-9
      atol: 0.001
      ignore_columns: [id, at]
      ignore_order: false
"""


def write(tmp_path, text):
    path = tmp_path / "s.streamtest.yaml"
    path.write_text(text)
    return path


def test_expect_loads_tolerances_and_ignored_columns(tmp_path):
    (_, expect) = load_scenario(write(tmp_path, TOLERANT)).steps
    # PyYAML reads 1e-9 (no dot) as text; the loader takes it as the number it is.
    assert expect.args["rtol"] == 1e-9 and isinstance(expect.args["rtol"], float)
    assert expect.args["atol"] == 0.001
    assert expect.args["ignore_columns"] == ["id", "at"]
    assert list(validator().iter_errors(as_editors_see_it(TOLERANT))) == []


@pytest.mark.parametrize(("edit", "message"), [
    ("rtol: -1e-9", "steps[1].expect.rtol: must be a number >= 0, such as 1e-9"),
    ("rtol: -1.0e-9", "steps[1].expect.rtol: must be a number >= 0"),
    ("rtol: close", "steps[1].expect.rtol: must be a number >= 0"),
    ("rtol: true", "steps[1].expect.rtol: must be a number >= 0"),
    ("ignore_columns: id", "steps[1].expect.ignore_columns: must be a list of field names"),
    ("ignore_columns: [id, 3]",
     "steps[1].expect.ignore_columns[1]: must be a field name (a non-empty string)"),
    ("ignore_columns: ['']",
     "steps[1].expect.ignore_columns[0]: must be a field name (a non-empty string)"),
])
def test_the_loader_and_the_schema_refuse_bad_options(tmp_path, edit, message):
    name = edit.split(":")[0]
    lines = [line for line in TOLERANT.splitlines() if not line.strip().startswith(name)]
    text = "\n".join([*lines, f"      {edit}", ""])
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(tmp_path, text))
    assert f"s.streamtest.yaml:{len(lines) + 1}: {message}" in str(caught.value)
    assert not validator().is_valid(as_editors_see_it(text))


@pytest.mark.parametrize("value", ["0", "0.5", "1e-9", "1.5E+3", ".5", "2"])
def test_numbers_yaml_reads_as_text_or_numbers_are_taken(tmp_path, value):
    text = TOLERANT.replace("rtol: 1e-9", f"rtol: {value}")
    (_, expect) = load_scenario(write(tmp_path, text)).steps
    assert expect.args["rtol"] == float(value)
    assert validator().is_valid(as_editors_see_it(text))


# --- the step, on a stand-in driver -------------------------------------------------------------
class Driver:
    """What ``expect`` uses of a driver: output handles over queues filled by hand."""

    def __init__(self, kafka: bool, *records: TestRecord) -> None:
        self.history = History(["out"])  # a queue for "out" from the start
        self.kafka = kafka
        self.history.queue("out").extend(records)

    def create_output_topic(self, name: str, **settings: object) -> TestOutputTopic:
        link = OutputLink(check_open=lambda: None, history=self.history, to_frame=None)
        return TestOutputTopic._create(link, name, kafka=self.kafka)


def expect(driver: Driver, **args: object) -> None:
    scenario = SimpleNamespace(outputs={})  # no deserializers: values as queued
    _Runner(scenario, driver)._expect({"topic": "out", **args})  # type: ignore[arg-type]


def rows(*values: object) -> list[TestRecord]:
    return [TestRecord(value=v, topic="out", batch_id=i) for i, v in enumerate(values)]


def kafka(*pairs: tuple[object, object]) -> list[TestRecord]:
    return [TestRecord(value=v, key=k, topic="out", batch_id=0, partition=0, offset=i)
            for i, (k, v) in enumerate(pairs)]


def test_expect_values_with_a_tolerance_and_ignored_columns():
    values = ({"id": 9, "user": "b", "avg": 1.0}, {"id": 8, "user": "a", "avg": 0.1 + 0.2})
    expect(Driver(False, *rows(*values)), values=[{"user": "a", "avg": 0.3},
                                                  {"user": "b", "avg": 1.0}],
           rtol=1e-9, ignore_columns=["id"])  # in any order: the default of expect
    with pytest.raises(OutputMismatchError) as caught:
        expect(Driver(False, *rows(*values)), values=[{"user": "a", "avg": 0.3},
                                                      {"user": "b", "avg": 1.0}],
               ignore_columns=["id"])
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("topic 'out': 2 values expected, 2 read; 1 differ (order "
                               "ignored)") and lines[0].endswith("; ignoring columns: id")
    assert any("avg: 0.3 != 0.30000000000000004" in line for line in lines)
    assert not any('"id"' in line or "id:" in line for line in lines[1:])
    with pytest.raises(OutputMismatchError, match="2 differ"):
        expect(Driver(False, *rows(*values)), ignore_order=False, rtol=1e-9,
               ignore_columns=["id"], values=[{"user": "a", "avg": 0.3},
                                              {"user": "b", "avg": 1.0}])


def test_expect_key_values_and_table_ignore_columns_of_the_values():
    pairs = kafka(("k1", {"seq": 1, "total": 0.1 + 0.2}), ("k2", {"seq": 2, "total": 5.0}),
                  ("k1", {"seq": 3, "total": 0.7}))
    expect(Driver(True, *pairs), key_values=[["k1", {"total": 0.3}], ["k2", {"total": 5.0}],
                                             ["k1", {"total": 0.7}]],
           ignore_order=False, rtol=1e-9, ignore_columns=["seq"])
    expect(Driver(True, *pairs), table={"k1": {"total": 0.7}, "k2": {"total": 5}},
           atol=1e-12, ignore_columns=["seq"])
    with pytest.raises(OutputMismatchError) as caught:
        expect(Driver(True, *pairs), table={"k1": {"total": 0.71}, "k2": {"total": 5}},
               rtol=1e-9, ignore_columns=["seq"])
    assert str(caught.value).splitlines()[0] == (
        "topic 'out' as a table: 2 values expected, 2 read; 1 differ (order ignored); "
        "compared with rtol=1e-09, atol=0.0; ignoring columns: seq")


def test_expect_with_a_column_no_value_has_names_the_fields():
    with pytest.raises(InvalidArgumentError, match="their fields are avg, user"):
        expect(Driver(False, *rows({"user": "a", "avg": 1.0})), values=[{"user": "a"}],
               ignore_columns=["usr"])
