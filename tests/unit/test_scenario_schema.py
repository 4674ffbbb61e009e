"""The JSON Schema of scenario files: made from the loader's table of fields, shipped in
the package, printed by ``pyspark-streamtest scenario-schema``; it accepts every shipped
scenario and refuses each documented mistake (no Spark needed)."""

from __future__ import annotations

import functools
import json
import re
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml

from pyspark_streamtest.gates._scenario_schema import json_ready, scenario_schema_text
from pyspark_streamtest.gates.cli import main
from pyspark_streamtest.gates.scenario import ScenarioError, load_scenario

from .test_scenario_files import GOOD, MISTAKES

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = files("pyspark_streamtest.gates") / "scenario.schema.json"
# What the schema cannot see: the parsed data has no duplicate keys, and no data at all
# comes from a file that is not YAML.
NOT_IN_THE_DATA = ("given twice", "not valid YAML")


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SHIPPED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def as_editors_see_it(text: str) -> object:
    """The data of a scenario file, YAML's instants as the strings an editor sees."""
    return json_ready(yaml.safe_load(text))


def shipped_scenarios() -> list[Path]:
    return sorted(path for folder in ("examples", "fixtures", "tests", "docs", "src")
                  for suffix in ("yaml", "yml", "json")
                  for path in (ROOT / folder).rglob(f"*.streamtest.{suffix}"))


def test_the_shipped_schema_is_the_generated_one():
    assert SHIPPED.read_text(encoding="utf-8") == scenario_schema_text(), (
        "regenerate it: pyspark-streamtest scenario-schema > "
        "src/pyspark_streamtest/gates/scenario.schema.json")
    assert json.loads(scenario_schema_text())["$schema"] == (
        "https://json-schema.org/draft/2020-12/schema")


def test_the_command_prints_the_schema(capsys):
    assert main(["scenario-schema"]) == 0
    assert capsys.readouterr().out == scenario_schema_text()


def test_there_are_shipped_scenarios_to_check():
    names = {path.name for path in shipped_scenarios()}
    assert {"late_click.streamtest.yaml", "customers_table.streamtest.json"} <= names


@pytest.mark.parametrize("path", shipped_scenarios(), ids=lambda p: p.name)
def test_every_shipped_scenario_validates(path):
    load_scenario(path)  # the loader takes it ...
    errors = [e.message for e in validator().iter_errors(
        as_editors_see_it(path.read_text(encoding="utf-8")))]
    assert errors == []  # ... and so does the schema


def test_the_schema_and_the_loader_agree_on_the_docs_scenarios(tmp_path):
    page = (ROOT / "docs" / "how-to" / "ci-gates.md").read_text(encoding="utf-8")
    scenarios = [block for block in re.findall(r"```yaml\n(.*?)```", page, re.S)
                 if "steps:" in block]
    scenarios += re.findall(r'LATE_CLICK = """\n(.*?)"""', page, re.S)
    verdicts = []
    for text in [GOOD, *scenarios]:
        path = tmp_path / "s.streamtest.yaml"
        path.write_text(text)
        try:
            load_scenario(path)
            loads = True
        except ScenarioError:
            loads = False
        assert validator().is_valid(as_editors_see_it(text)) is loads, text
        verdicts.append(loads)
    assert verdicts.count(True) >= 3 and verdicts.count(False) >= 1  # the three mistakes


@pytest.mark.parametrize(("edit", "where"), MISTAKES, ids=lambda v: str(v)[:40])
def test_each_documented_mistake_is_refused(tmp_path, edit, where):
    old, new = edit
    text = GOOD.replace(old, new)
    path = tmp_path / "s.streamtest.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError):
        load_scenario(path)
    if any(reason in where for reason in NOT_IN_THE_DATA):
        pytest.skip("a YAML matter, not the data's")
    assert not validator().is_valid(as_editors_see_it(text)), where


@pytest.mark.parametrize("text", [
    "name: x\n",                                      # no steps
    "steps: []\n",                                    # no step
    '{"steps": ["process", {"expect": {"topic": "t"}}]}',   # values, key_values or table?
    "steps:\n  - expect_state_rows: {output: o}\n",   # which count?
    "steps:\n  - {process: null, restart: null}\n",   # two steps in one
    "steps:\n  - advance_wall_clock: {delta: 1s}\n",  # a duration, not a mapping
    "steps:\n  - expect_watermark: {at: +1s, extra: 1}\n",
    "steps:\n  - pipe: {topic: t, records: [{value: 1, partition: -1}]}\n",
    "steps:\n  - expect: {topic: t, key_values: [[1, 2, 3]]}\n",
])
def test_the_schema_and_the_loader_refuse_the_same_files(tmp_path, text):
    path = tmp_path / "s.streamtest.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError):
        load_scenario(path)
    assert not validator().is_valid(as_editors_see_it(text))


@pytest.mark.parametrize("text", [
    "steps: [process, restart, {process: null}, {restart: {}}]\n",
    "steps:\n  - advance_watermark_to: {to: +5s, output: counts}\n"
    "  - advance_watermark_to: 2024-01-01 00:00:05 +01:00\n",
    "steps:\n  - expect_watermark: null\n  - expect_watermark: {at: +1s}\n",
    "topology: null\nsteps:\n  - expect_late: {count: 0, output: o}\n",
    "trigger_interval: 1m30s\nsteps:\n"
    "  - pipe: {topic: t, records: [{value: null, key: k, headers: {h: 1}, "
    "partition: 0, timestamp: null}]}\n",
])
def test_the_schema_and_the_loader_take_the_same_files(tmp_path, text):
    path = tmp_path / "s.streamtest.yaml"
    path.write_text(text)
    load_scenario(path)
    assert list(validator().iter_errors(as_editors_see_it(text))) == []
