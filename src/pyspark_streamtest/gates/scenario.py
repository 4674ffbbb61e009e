"""Running scenario files: on a fresh driver, step by step, into a result that gates
(pytest items, the ``pyspark-streamtest`` command, JUnit XML) report.

The file format is documented in :mod:`pyspark_streamtest.gates.scenario_file`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.equality import Comparison, compare_values
from ..core.records import BatchRecord
from ..core.stable import parse_instant, utc_text
from ..core.time import require_aware
from ..errors import hide_our_frames
from .scenario_file import (
    DEFAULT_START,
    SCENARIO_SUFFIXES,
    Scenario,
    ScenarioError,
    Step,
    load_scenario,
    parse_duration,
)

__tracebackhide__ = hide_our_frames

__all__ = [
    "SCENARIO_SUFFIXES",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "Step",
    "load_scenario",
    "parse_duration",
    "resolve_topology",
    "run_scenario",
]


@dataclass(frozen=True)
class ScenarioResult:
    """What running a scenario did: ``passed``; on failure ``failure`` (an expectation
    did not hold: :class:`AssertionError`) or ``error`` (anything else), with the step
    (``failed_step``) it happened in; the ``batches`` run, and ``seconds`` taken."""

    scenario: Scenario
    batches: tuple[BatchRecord, ...]
    seconds: float
    failure: str | None = None
    error: str | None = None
    failed_step: Step | None = None

    @property
    def passed(self) -> bool:
        return self.failure is None and self.error is None

    @property
    def message(self) -> str:
        return self.failure or self.error or ""


# --- running ----------------------------------------------------------------------------------
def resolve_topology(
    spec: str, *, search: Sequence[str | os.PathLike[str]] = ()
) -> Callable[..., None]:
    """The topology function ``spec`` (``module:function``) names, found explicitly.

    First ``module`` is imported by name (an installed package, or a module on
    ``sys.path``, such as the test suite's root under pytest). If no module of that name
    exists, the file ``module/path.py`` (or ``module/path/__init__.py``) is loaded from
    each folder of ``search`` in turn (:func:`run_scenario` passes the scenario file's
    folder, then the current directory). ``sys.path`` is never changed. A
    :class:`ScenarioError` lists every place tried."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ScenarioError(f"topology {spec!r} must be 'module:function'")
    tried = [f"import {module_name!r} (sys.path)"]
    module = _import_module(module_name, spec)
    if module is None:
        relative = Path(*module_name.split("."))
        for folder in search:
            for candidate in (Path(folder) / relative.with_suffix(".py"),
                              Path(folder) / relative / "__init__.py"):
                tried.append(str(candidate))
                if candidate.is_file():
                    module = _load_file(module_name, candidate, spec)
                    break
            if module is not None:
                break
    if module is None:
        raise ScenarioError(f"cannot find module {module_name!r} of topology {spec!r}; "
                            f"tried: {'; '.join(tried)}")
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise ScenarioError(f"module {module_name!r} has no function {attribute!r} "
                            f"(topology {spec!r}, module file {module.__file__})")
    return found  # type: ignore[no-any-return]


def _import_module(name: str, spec: str) -> ModuleType | None:
    """The module ``name`` if it can be imported, None if no such module exists."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if name == missing or name.startswith(missing + "."):
            return None  # the module (or its package) does not exist
        raise ScenarioError(f"importing module {name!r} of topology {spec!r} failed: "
                            f"{error}") from error
    except Exception as error:
        raise ScenarioError(f"importing module {name!r} of topology {spec!r} failed: "
                            f"{type(error).__name__}: {error}") from error


def _load_file(name: str, path: Path, spec: str) -> ModuleType:
    """Execute the module file ``path`` as module ``name`` (registered in sys.modules, so
    a second scenario naming it reuses it)."""
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ScenarioError(f"loading {path} for topology {spec!r} failed: "
                            f"{type(error).__name__}: {error}") from error
    return module


def run_scenario(
    scenario: Scenario | str | os.PathLike[str],
    *,
    topology: str | Callable[..., None] | None = None,
    spark: Any = None,
    **driver_options: Any,
) -> ScenarioResult:
    """Run a scenario on a fresh driver and return what happened (never raises for a
    failing expectation or step: see :attr:`ScenarioResult.passed`). ``topology``
    (``module:function`` or the function) overrides the file's; a file that names none
    needs it. The driver is always closed. Invalid files raise :class:`ScenarioError`."""
    from ..driver.driver import TopologyTestDriver

    loaded = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    chosen = topology if topology is not None else loaded.topology
    if chosen is None:
        raise ScenarioError("no topology: name one in the file ('topology: module:function') "
                            "or with --topology", file=os.path.basename(loaded.path))
    search = (os.path.dirname(os.path.abspath(loaded.path)), os.getcwd())
    function = (resolve_topology(chosen, search=search) if isinstance(chosen, str)
                else chosen)
    began = time.perf_counter()
    batches: tuple[BatchRecord, ...] = ()
    current: Step | None = None
    try:
        with TopologyTestDriver(function, spark=spark, start_time=loaded.start_time,
                                trigger_interval=loaded.trigger_interval,
                                **driver_options) as driver:
            try:
                runner = _Runner(loaded, driver)
                for current in loaded.steps:
                    runner.run(current)
            except AssertionError:
                # the failure's timeline and picture: event times as the query has them
                with contextlib.suppress(Exception):  # the failure is what matters
                    batches = driver.evaluate_event_times()
                raise
            finally:
                batches = batches or driver.batches
    except AssertionError as failure:
        return ScenarioResult(loaded, batches, time.perf_counter() - began,
                              failure=_at_step(loaded, current, failure), failed_step=current)
    except Exception as error:
        return ScenarioResult(loaded, batches, time.perf_counter() - began,
                              error=_at_step(loaded, current, error), failed_step=current)
    return ScenarioResult(loaded, batches, time.perf_counter() - began)


def _at_step(scenario: Scenario, step: Step | None, error: BaseException) -> str:
    text = str(error) if isinstance(error, AssertionError) else f"{type(error).__name__}: {error}"
    if step is None:
        return f"{os.path.basename(scenario.path)}: {text}"
    return (f"{os.path.basename(scenario.path)}:{step.line}: {step.field} ({step.kind}): "
            f"{text}")


class _Runner:
    def __init__(self, scenario: Scenario, driver: Any) -> None:
        self._scenario = scenario
        self._driver = driver
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, Any] = {}

    def _input(self, topic: str) -> Any:
        if topic not in self._inputs:
            self._inputs[topic] = self._driver.create_input_topic(
                topic, **self._scenario.inputs.get(topic, {}))
        return self._inputs[topic]

    def _output(self, topic: str) -> Any:
        if topic not in self._outputs:
            handle = self._driver.create_output_topic(topic)
            if handle.is_kafka:
                settings = {"key_deserializer": "string", "value_deserializer": "string",
                            **self._scenario.outputs.get(topic, {})}
                handle = self._driver.create_output_topic(topic, **settings)
            self._outputs[topic] = handle
        return self._outputs[topic]

    def _only_output(self, args: Mapping[str, Any]) -> str:
        if "output" in args:
            return str(args["output"])
        names = self._driver.output_names
        if len(names) != 1:
            raise ScenarioError(f"this topology has outputs {', '.join(names)}; say which "
                                "with 'output:'")
        return str(names[0])

    def run(self, step: Step) -> None:
        driver, args = self._driver, step.args
        if step.kind == "pipe":
            self._input(args["topic"]).pipe_record_list(args["records"])
        elif step.kind == "advance_wall_clock":
            driver.advance_wall_clock(args["delta"])
        elif step.kind == "process":
            driver.process_all_available()
        elif step.kind == "restart":
            driver.restart()
        elif step.kind == "advance_watermark_to":
            driver.advance_watermark_to(args["to"], output=args.get("output"))
        elif step.kind == "expect":
            self._expect(args)
        elif step.kind == "expect_watermark":
            output = self._only_output(args)
            actual = driver.watermark(output)
            if actual != args["at"]:
                raise AssertionError(f"watermark of {output!r}: expected "
                                     f"{utc_text(args['at'])}, actual {utc_text(actual)}")
        elif step.kind == "expect_state_rows":
            driver.assert_num_state_rows(
                self._only_output(args), total=args.get("total"), updated=args.get("updated"),
                removed=args.get("removed"),
                dropped_by_watermark=args.get("dropped_by_watermark"))
        elif step.kind == "expect_late":
            output = self._only_output(args)
            late = driver.late_records(output)
            if len(late) != args["count"]:
                listed = "\n".join(f"  batch {r.batch_id}: {r.record.value!r} @ "
                                   f"{utc_text(r.record.timestamp)}" for r in late) or "  (none)"
                raise AssertionError(f"late records of {output!r}: expected {args['count']}, "
                                     f"actual {len(late)}:\n{listed}")

    def _expect(self, args: Mapping[str, Any]) -> None:
        """Compare as ``expect`` says: ``ignore_order`` (default true), ``rtol``,
        ``atol`` and ``ignore_columns`` as in ``assert_values_equal``; for
        ``key_values`` and ``table`` the columns are the values' fields."""
        how = Comparison.of(ignore_order=bool(args.get("ignore_order", True)),
                            rtol=args.get("rtol", 0.0), atol=args.get("atol", 0.0),
                            ignore_columns=args.get("ignore_columns"))
        handle = self._output(args["topic"])
        title = f"topic {args['topic']!r}"
        if "table" in args:
            actual_table = handle.read_key_values_to_map(tombstones="delete")
            compare_values(
                [[k, v] for k, v in actual_table.items()],
                [[k, _instants(v)] for k, v in args["table"].items()],
                dataclasses.replace(how, ignore_order=True), title=f"{title} as a table",
                keyed=True)
        elif "key_values" in args:
            compare_values(
                [[kv.key, kv.value] for kv in handle.read_key_values_to_list()],
                [[k, _instants(v)] for k, v in args["key_values"]],
                how, title=title, keyed=True)
        else:
            records = handle.read_records_to_list()
            compare_values([r.value for r in records], _instants(args["values"]), how,
                           title=title, batch_ids=[r.batch_id for r in records])


def _instants(value: Any) -> Any:
    """Expected values with ISO-instant strings (JSON files) turned into datetimes."""
    instant = parse_instant(value) if isinstance(value, str) else None
    if instant is not None:
        return instant
    if isinstance(value, datetime):
        return require_aware(value, "an expected time")
    if isinstance(value, dict):
        return {k: _instants(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_instants(v) for v in value]
    return value


def invalid_result(path: str | os.PathLike[str], error: BaseException) -> ScenarioResult:
    """The result of a scenario file that could not be loaded (an ``error``)."""
    placeholder = Scenario(name=Path(path).name, path=os.fspath(path), topology=None,
                           start_time=DEFAULT_START, trigger_interval=timedelta(seconds=1),
                           steps=())
    return ScenarioResult(placeholder, (), 0.0, error=str(error))


def scenario_history(result: ScenarioResult) -> str:
    """The run as stable text (the golden timeline plus the outcome), for comparing runs."""
    from ..reporting.golden import format_golden_timeline

    outcome = "passed" if result.passed else f"did not pass: {result.message}"
    return format_golden_timeline(result.batches) + f"# outcome: {outcome}\n"


def junit_xml(results: Sequence[ScenarioResult], *, suite: str = "pyspark-streamtest",
              properties: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """JUnit XML for scenario results: one ``testcase`` per scenario (``classname`` the
    file), ``failure`` for unmet expectations, ``error`` for anything else, the batch
    timeline in ``system-out``; ``properties`` per scenario path (e.g. a picture path)."""
    import xml.etree.ElementTree as ET

    from ..reporting.timeline import format_timeline

    root = ET.Element("testsuites")
    failures = sum(r.failure is not None for r in results)
    errors = sum(r.error is not None for r in results)
    total = sum(r.seconds for r in results)
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)),
                         failures=str(failures), errors=str(errors), skipped="0",
                         time=f"{total:.3f}")
    for result in results:
        case = ET.SubElement(node, "testcase", classname=result.scenario.path,
                             name=result.scenario.name, time=f"{result.seconds:.3f}")
        extra = (properties or {}).get(result.scenario.path, {})
        if extra:
            props = ET.SubElement(case, "properties")
            for key, value in extra.items():
                ET.SubElement(props, "property", name=key, value=value)
        if not result.passed:
            tag = "failure" if result.failure is not None else "error"
            first = result.message.splitlines()[0] if result.message else tag
            problem = ET.SubElement(case, tag, message=first)
            problem.text = result.message
        ET.SubElement(case, "system-out").text = format_timeline(result.batches)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"
