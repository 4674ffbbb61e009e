"""The house's rules (docs/architecture.md), checked on the code as it is: imports point
down only, no import circles, no module past ~500 lines, and every public import path of
the package keeps working."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

import pyspark_streamtest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(pyspark_streamtest.__file__).parent
MAX_LINES = 500

# Old flat module paths that moved into rooms: kept so that users' imports keep working.
COMPATIBILITY_PATHS = {
    "assertions": "core.equality",
    "canned": "gates.canned",
    "cli": "gates.cli",
    "clock": "core.time",
    "features": "core.features",
    "golden": "reporting.golden",
    "picture": "reporting.picture",
    "records": "core.records",
    "report": "reporting.timeline",
    "scenario": "gates.scenario",
    "session": "core.session",
    "topics": "driver.input_topic",
    "topology": "driver.topology",
}
DOCUMENTED_MODULES = [
    "errors", "kafka", "state", "plugin", "driver", "testing", "testing.strategies",
    "testing.model", "testing.invariants", *COMPATIBILITY_PATHS,
]


def test_import_contracts_hold():
    """import-linter's contracts in pyproject.toml: the layers, and no room using a
    compatibility path."""
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True) == 0


def test_no_import_circles():
    graph = grimp.build_graph("pyspark_streamtest")
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if graph.chain_exists(importer=imported, imported=importer):
                circles.append(" -> ".join(graph.find_shortest_chain(
                    importer=imported, imported=importer) or ()) + f" -> {imported}")
    assert circles == []


def test_no_module_is_past_the_size_limit():
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_every_face_name_imports():
    for name in pyspark_streamtest.__all__:
        assert getattr(pyspark_streamtest, name) is not None, name
    exec(f"from pyspark_streamtest import {', '.join(pyspark_streamtest.__all__)}", {})


@pytest.mark.parametrize("module", DOCUMENTED_MODULES)
def test_documented_module_paths_import(module):
    imported = importlib.import_module(f"pyspark_streamtest.{module}")
    for name in getattr(imported, "__all__", ()):
        # A package's __all__ may name its submodules (pyspark_streamtest.testing).
        assert hasattr(imported, name) or importlib.util.find_spec(
            f"{imported.__name__}.{name}") is not None, f"{imported.__name__}.{name}"


@pytest.mark.parametrize(("old", "home"), sorted(COMPATIBILITY_PATHS.items()))
def test_compatibility_paths_hand_out_the_same_objects(old, home):
    shim = importlib.import_module(f"pyspark_streamtest.{old}")
    room = importlib.import_module(f"pyspark_streamtest.{home}")
    for name in shim.__all__:
        value = getattr(shim, name)
        if hasattr(pyspark_streamtest, name):
            assert value is getattr(pyspark_streamtest, name), name
        if hasattr(room, name):
            assert value is getattr(room, name), name


def test_scenario_files_can_still_name_the_canned_topologies_by_their_old_path():
    from pyspark_streamtest.gates.canned import clicks_per_user
    from pyspark_streamtest.gates.scenario import resolve_topology

    assert resolve_topology("pyspark_streamtest.canned:clicks_per_user") is clicks_per_user


def test_the_console_script_points_at_the_cli():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts")
                 if e.name == "pyspark-streamtest"]
    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "pyspark_streamtest"]
    assert script.value == "pyspark_streamtest.gates.cli:main"
    assert plugin.value == "pyspark_streamtest.plugin"
    assert os.path.basename(importlib.import_module(plugin.value).__file__ or "") == "plugin.py"


# Programs of their own, run by path in other processes (Spark's Python workers): they
# must not import the package, and their frames never reach a test's traceback.
RUN_BY_PATH = {"pyspark_streamtest._spark._worker_server",
               "pyspark_streamtest._spark._worker_launcher",
               "pyspark_streamtest._spark._jvm_keeper"}


def test_every_module_hides_its_frames_from_failures_it_reports():
    """pytest leaves a module's frames out of a traceback when the module's globals say
    so: every module of the package does, through one function (see ``errors.hide_our_frames``)."""
    from pyspark_streamtest.errors import hide_our_frames

    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(["pyspark_streamtest", *parts]).removesuffix(".__init__")
        if name in RUN_BY_PATH:
            continue
        if getattr(importlib.import_module(name), "__tracebackhide__", None) is not hide_our_frames:
            missing.append(name)
    assert missing == []
