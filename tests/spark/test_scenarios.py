"""Scenario files end to end: the run and check-determinism commands (exit codes, JUnit
XML, pictures) and the pytest collector."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pyspark_streamtest.gates.cli import main
from pyspark_streamtest.gates.scenario import run_scenario

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
LATE_CLICK = EXAMPLES / "late_click.streamtest.yaml"
CUSTOMERS = EXAMPLES / "customers_table.streamtest.json"

SCORES = """\
name: scores
steps:
  - pipe:
      topic: clicks
      records:
        - {value: {user: a, url: /}, timestamp: +1s}
        - {value: {user: b, url: /}, timestamp: +2s}
  - advance_wall_clock: 1s
  - expect_watermark: {at: null}        # no withWatermark, no watermark
"""


@pytest.fixture(autouse=True)
def _session(spark):
    """The CLI runs on the active session: the suite's."""
    return spark


def failing_copy(tmp_path: Path) -> Path:
    text = LATE_CLICK.read_text().replace("user: alice, count: 2}", "user: alice, count: 3}")
    target = tmp_path / "wrong_count.streamtest.yaml"
    target.write_text(text)
    return target


def test_run_passes_the_examples_and_exits_0(tmp_path, capsys):
    report = tmp_path / "reports" / "junit.xml"
    assert main(["run", str(LATE_CLICK), str(CUSTOMERS), "--junitxml", str(report)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "2 passed, 0 failed" in out
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    names = [case.get("name") for case in suite.iter("testcase")]
    assert "tombstones delete customers from the latest-value table" in names


def test_a_failing_expectation_exits_1_with_the_difference_junit_and_picture(tmp_path, capsys):
    wrong = failing_copy(tmp_path)
    report = tmp_path / "junit.xml"
    pictures = tmp_path / "pictures"
    status = main(["run", str(wrong), str(CUSTOMERS), "--junitxml", str(report),
                   "--timeline-dir", str(pictures)])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL" in out and "1 passed, 1 failed" in out
    # where (file:line, step), then expected vs actual side by side with the field
    assert "wrong_count.streamtest.yaml:24: steps[8] (expect): topic 'counts'" in out
    assert "count: 3 != 2" in out
    assert "batch timeline:" in out
    case = next(c for c in ET.parse(report).getroot().iter("testcase")
                if c.find("failure") is not None)
    assert "count: 3 != 2" in case.find("failure").text
    (prop,) = case.iter("property")
    assert prop.get("name") == "streamtest_timeline"
    assert Path(prop.get("value")).read_text().startswith("<svg")
    assert "counts" in case.find("system-out").text


def test_an_invalid_file_exits_1_with_its_line(tmp_path, capsys):
    bad = tmp_path / "bad.streamtest.yaml"
    bad.write_text("topology: pyspark_streamtest.gates.canned:clicks_per_user\nsteps:\n  - wait: 1s\n")
    report = tmp_path / "junit.xml"
    assert main(["run", str(bad), "--junitxml", str(report)]) == 1
    assert "bad.streamtest.yaml:3: steps[0]: unknown step 'wait'" in capsys.readouterr().out
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("errors") == "1"


def test_a_missing_topology_and_an_unknown_topic_are_errors_not_crashes(tmp_path, capsys):
    scores = tmp_path / "scores.streamtest.yaml"
    scores.write_text(SCORES)
    assert main(["run", str(scores)]) == 1
    assert "no topology" in capsys.readouterr().out
    assert main(["run", str(scores), "--topology", "tests.scenario_topologies:nope"]) == 1
    assert "has no function 'nope'" in capsys.readouterr().out
    scores.write_text(SCORES.replace("topic: clicks", "topic: clikcs"))
    result = run_scenario(scores, topology="tests.scenario_topologies:hashed_scores")
    assert not result.passed and result.error is not None
    assert "scores.streamtest.yaml:3: steps[0] (pipe): UnknownTopicError" in result.error


def test_run_with_the_usage_wrong_exits_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run"])
    assert exited.value.code == 2


def test_the_gate_passes_a_deterministic_topology(tmp_path, capsys):
    scores = tmp_path / "scores.streamtest.yaml"
    scores.write_text(SCORES)
    status = main(["check-determinism", str(scores), "--runs", "2", "--cpu-load", "1",
                   "--topology", "tests.scenario_topologies:hashed_scores"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "DETERMINISTIC" in out and "2 identical runs" in out


def test_the_gate_catches_a_non_deterministic_topology(tmp_path, capsys):
    scores = tmp_path / "scores.streamtest.yaml"
    scores.write_text(SCORES)
    status = main(["check-determinism", str(scores), "--runs", "2",
                   "--topology", "tests.scenario_topologies:random_scores"])
    out = capsys.readouterr().out
    assert status == 1
    assert "NOT DETERMINISTIC" in out and "run 2 of 2 differs from run 1" in out
    # the first differing batch, with the rows that changed
    assert "first difference in the batch #1 of the history:" in out
    assert '-  out {"score":' in out and '+  out {"score":' in out


def test_the_gate_reports_a_deterministic_failure(tmp_path, capsys):
    wrong = failing_copy(tmp_path)
    assert main(["check-determinism", str(wrong), "--runs", "2"]) == 1
    assert "DETERMINISTIC BUT FAILING" in capsys.readouterr().out


def test_pytest_collects_scenario_files(pytester, tmp_path):
    shutil.copy(LATE_CLICK, pytester.path / LATE_CLICK.name)
    shutil.copy(failing_copy(tmp_path), pytester.path / "wrong_count.streamtest.yaml")
    (pytester.path / "bad.streamtest.yml").write_text("steps:\n  - process: now\n")
    pytester.makepyfile(test_driver="""
        from pyspark_streamtest.gates.canned import clicks_per_user

        def test_fails_after_a_batch(topology_driver):
            driver = topology_driver(clicks_per_user)
            driver.create_input_topic("clicks").pipe_input({"user": "a", "url": "/"})
            driver.process_all_available()
            assert len(driver.batches) == 0
    """)
    pictures = pytester.path / "pictures"
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml",
                                f"--streamtest-timeline-dir={pictures}")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert ("invalid scenario file: bad.streamtest.yml:2: steps[0].process: 'process' takes no "
            "arguments") in out
    assert "wrong_count.streamtest.yaml:24: steps[8] (expect)" in out
    assert "count: 3 != 2" in out
    assert out.count("- streamtest timeline -") == 2  # the scenario's and the driver test's
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    timelines = {case.get("name"): prop.get("value") for case in junit.iter("testcase")
                 for prop in case.iter("property") if prop.get("name") == "streamtest_timeline"}
    assert set(timelines) == {"a click older than the previous batch's watermark is dropped",
                              "test_fails_after_a_batch"}
    for path in timelines.values():
        assert Path(path).read_text().startswith("<svg")


def test_a_scenario_finds_its_topology_module_beside_it(tmp_path, monkeypatch, spark):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "beside_topologies.py").write_text(
        "from pyspark.sql import functions as F\n\n"
        "def upper_users(t):\n"
        "    clicks = t.input('clicks', schema='user STRING, url STRING, ts TIMESTAMP',\n"
        "                     timestamp_column='ts')\n"
        "    t.output('users', clicks.select(F.upper('user').alias('user')))\n"
    )
    scenario = folder / "upper.streamtest.yaml"
    scenario.write_text(
        "topology: beside_topologies:upper_users\n"
        "steps:\n"
        "  - pipe: {topic: clicks, records: [{value: {user: ann, url: /}}]}\n"
        "  - process\n"
        "  - expect: {topic: users, values: [{user: ANN}]}\n"
    )
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    result = run_scenario(scenario, spark=spark)
    assert result.passed, result.message


def test_scenario_compares_timestamps_written_as_text_as_instants(tmp_path, spark):
    (tmp_path / "text_times.py").write_text(
        "from pyspark.sql import functions as F\n\n"
        "def seconds_text(t):\n"
        "    clicks = t.input('clicks', schema='user STRING, ts TIMESTAMP',\n"
        "                     timestamp_column='ts')\n"
        "    t.output('out', clicks.select('user', F.date_format(\n"
        "        'ts', \"yyyy-MM-dd'T'HH:mm:ssXXX\").alias('at')))\n"
    )
    scenario = tmp_path / "text_times.streamtest.json"
    scenario.write_text(
        '{"topology": "text_times:seconds_text", "steps": ['
        '{"pipe": {"topic": "clicks", "records": [{"value": {"user": "a"}, "timestamp": "+1s"}]}},'
        ' "process",'
        ' {"expect": {"topic": "out", "values": [{"user": "a", "at": "2024-01-01T00:00:01.000Z"}]}}'
        "]}"
    )
    result = run_scenario(scenario, spark=spark, sql_conf={"spark.sql.session.timeZone": "UTC"})
    assert result.passed, result.message
