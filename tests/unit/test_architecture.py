"""The house's rules (docs/architecture.md), checked on the code as it is: imports point
down only, no import circles, a room lends only what has no leading underscore, no
folder of more than 16 modules, a module past 500 lines said (a warning: the answer is a
seam, not a cut where the count falls) and none past 800, and every public import path
of the package keeps working."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import warnings
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

import pyspark_streamtest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(pyspark_streamtest.__file__).parent
SPLIT_LINES = 500  # past this a module is asking for a seam (a warning)
MAX_LINES = 800  # past this it has one nobody cut along (a failure)
MAX_MODULES = 16  # modules of one folder

# The module paths the docs show (API reference pages, how-tos): each must import.
DOCUMENTED_MODULES = [
    "errors", "kafka", "state", "plugin", "driver", "testing", "testing.strategies",
    "testing.model", "testing.invariants", "core.equality", "core.features", "core.records",
    "core.session", "core.time", "driver.topology", "driver.topics",
    "driver.queries", "gates.canned", "gates.cli", "gates.scenario",
    "gates.scenario_file", "mutate", "reporting.golden", "reporting.picture", "reporting.timeline",
]
# The package's floors from the top (pyproject.toml's first contract): each is a folder.
ROOMS = ["plugin", "gates", "cluster", "mutate", "reporting", "testing", "driver", "pipelines",
         "app", "kafka", "state", "core", "_spark"]


def test_import_contracts_hold():
    """import-linter's contracts in pyproject.toml: the package's layers, and the floors
    inside the plugin and inside the adapter."""
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


def _sizes() -> dict[str, int]:
    return {str(path.relative_to(PACKAGE)): len(path.read_text().splitlines())
            for path in PACKAGE.rglob("*.py")}


def test_no_module_is_past_the_size_limit():
    assert {name: n for name, n in _sizes().items() if n > MAX_LINES} == {}


def test_a_module_past_500_lines_is_said():
    """Not a failure: a module past 500 lines asks for a seam, and the seam, not the
    count, says where to split it. The warning names each one in pytest's summary."""
    large = {name: n for name, n in _sizes().items() if n > SPLIT_LINES}
    if large:
        warnings.warn(f"modules past {SPLIT_LINES} lines, each asking for a seam: "
                      + ", ".join(f"{name} ({n})" for name, n in sorted(large.items())),
                      stacklevel=1)


def test_no_folder_holds_more_than_16_modules():
    crowded = {}
    for init in PACKAGE.rglob("__init__.py"):
        modules = [path for path in init.parent.glob("*.py") if path.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            crowded[init.parent.relative_to(PACKAGE.parent).as_posix()] = len(modules)
    assert crowded == {}


def test_a_room_lends_only_what_has_no_leading_underscore():
    """A module imports, from another room of the package, only modules (and names)
    without a leading underscore: a room's underscored modules are its own. The rooms are
    the package's folders; the adapter's name is the one underscore allowed."""
    borrowed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        room = parts[0] if len(parts) > 1 else None
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                package = ["pyspark_streamtest", *parts[:-1]]
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            target = name.split(".")
            if target[0] != "pyspark_streamtest" or len(target) < 2 or target[1] == room:
                continue
            folder = PACKAGE.parent.joinpath(*target)
            tails = target[2:] + [alias.name for alias in node.names  # modules imported by name
                                  if (folder / f"{alias.name}.py").is_file()
                                  or (folder / alias.name / "__init__.py").is_file()]
            taken = [tail for tail in tails if tail.startswith("_")]
            if taken:
                borrowed.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}: {taken}")
    assert borrowed == []


# How code reaches the JVM: Py4J itself, a DataFrame's or session's Java object, the
# gateway. Only the adapter (_spark/) may; the others ask it.
_JVM_TOUCH = re.compile(
    r"^\s*(?:import|from)\s+py4j\b|\._jdf\b|\._jsparkSession\b|\._jsc\b|\._gateway\b|\.jspark\b"
    r"|sparkContext\._jvm\b")


def test_only_the_adapter_reaches_the_jvm():
    touches = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "_spark"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if _JVM_TOUCH.search(line.split("#", 1)[0])
    ]
    assert touches == []


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


def test_the_package_s_top_holds_the_face_errors_and_folders_only():
    top = sorted(path.name for path in PACKAGE.iterdir() if path.name != "__pycache__")
    assert top == sorted(["__init__.py", "errors.py", "py.typed", *ROOMS])
    assert all((PACKAGE / room / "__init__.py").is_file() for room in ROOMS)


def test_no_room_holds_more_than_a_quarter_of_the_package():
    def lines(paths):
        return sum(len(path.read_text().splitlines()) for path in paths)

    total = lines(PACKAGE.rglob("*.py"))
    shares = {room: lines((PACKAGE / room).rglob("*.py")) / total for room in ROOMS}
    assert {room: round(share, 3) for room, share in shares.items() if share > 0.25} == {}


def test_scenario_files_name_the_canned_topologies_by_their_module_path():
    from pyspark_streamtest.gates.canned import clicks_per_user
    from pyspark_streamtest.gates.scenario import resolve_topology

    assert resolve_topology("pyspark_streamtest.gates.canned:clicks_per_user") is clicks_per_user


def test_the_console_script_points_at_the_cli():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts")
                 if e.name == "pyspark-streamtest"]
    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "pyspark_streamtest"]
    assert script.value == "pyspark_streamtest.gates.cli:main"
    assert plugin.value == "pyspark_streamtest.plugin"
    # the plugin is one folder, its face the folder's __init__
    face = Path(importlib.import_module(plugin.value).__file__ or "")
    assert (face.parent.name, face.name) == ("plugin", "__init__.py")


# Programs of their own, run by path in other processes (Spark's Python workers): they
# must not import the package, and their frames never reach a test's traceback.
RUN_BY_PATH = {"pyspark_streamtest._spark.runtime._worker_server",
               "pyspark_streamtest._spark.runtime._worker_launcher",
               "pyspark_streamtest._spark.runtime._jvm_keeper"}


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


def test_the_oracle_stands_alone():
    """The differential oracle imports nothing of the driver but the landing folders it
    reads as Spark alone does (through the topology room's door); of the package, only
    the runner (which makes its query) and the plugin's oracle option import it. What
    the others share with it (the queries' names, a progress's watermark) lives below
    them all."""
    graph = grimp.build_graph("pyspark_streamtest")
    oracle = "pyspark_streamtest.driver.oracle"
    assert sorted(m for m in graph.find_modules_directly_imported_by(oracle)
                  if m.startswith("pyspark_streamtest.driver.")) == [
        "pyspark_streamtest.driver.topology"]
    tree = ast.parse((PACKAGE / "driver" / "oracle.py").read_text())
    taken = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "topology" for alias in node.names}
    assert taken == {"LandingSource"}
    assert sorted(graph.find_modules_that_directly_import(oracle)) == [
        "pyspark_streamtest.driver.queries._runner", "pyspark_streamtest.plugin._oracle"]


DRIVER_ROOMS = ("topology", "queries", "topics")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """The absolute name of each module ``path`` imports from, with its line."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = list(parts[:-1])  # an __init__'s package is its folder, as a module's is
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def test_a_room_of_the_driver_is_entered_by_its_door():
    """A module outside ``driver/topology/``, ``driver/queries/`` or ``driver/topics/``
    imports from the room itself (its ``__init__.py``, which lists what it lends),
    never from one of the room's own modules."""
    entered = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for line, name in _imported_modules(path):
            for room in DRIVER_ROOMS:
                door = f"pyspark_streamtest.driver.{room}"
                if name.startswith(door + ".") and not here.startswith(door + "."):
                    entered.append(f"{path.relative_to(PACKAGE)}:{line} imports {name}")
    assert entered == []
    for room in DRIVER_ROOMS:
        face = importlib.import_module(f"pyspark_streamtest.driver.{room}")
        assert sorted(face.__all__) == sorted(
            name for name in vars(face) if not name.startswith("_") and name != "hide_our_frames"
            and not isinstance(vars(face)[name], type(face))), room


PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_the_page_names_every_room_and_module():
    """docs/architecture.md draws the house as built: every folder of the package is
    named on it as a room (``name/``), every module by its file name, and nothing it
    names as a module of the package is missing from the code."""
    page = PAGE.read_text()
    rooms = [path.parent.relative_to(PACKAGE).as_posix()
             for path in sorted(PACKAGE.rglob("__init__.py")) if path.parent != PACKAGE]
    unnamed_rooms = [room for room in rooms
                     if f"`{room}/`" not in page and f"`{room.rsplit('/', 1)[-1]}/`" not in page]
    assert unnamed_rooms == []
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if path.name != "__init__.py"]
    unnamed = [path.relative_to(PACKAGE).as_posix() for path in modules
               if not re.search(rf"`(?:[\w/]+/)?{re.escape(path.name)}`", page)]
    assert unnamed == []
    files = {path.name for path in modules} | {"__init__.py"}
    named = {match.group(2) for match in re.finditer(r"`([\w/.]+/)?(\w+\.py)`", page)
             if not (match.group(1) or "").startswith(("tests/", "benchmarks/", "examples/"))}
    assert sorted(named - files) == []


def test_the_page_lists_the_floors_in_the_contracts_order():
    """The floors table, top to bottom, is the first contract's layers (pyproject.toml),
    and each of the driver's rooms named in its rooms table is a folder or module."""
    page = PAGE.read_text()
    floors = re.findall(r"^\| \d+ \| (.+?) \|", page, re.M)
    on_page = [re.findall(r"`(\w+)(?:/|\.py)`", floor) for floor in floors]
    pyproject = (PACKAGE.parents[1] / "pyproject.toml").read_text()
    first = re.search(r"^layers = \[\n(.*?)^\]", pyproject, re.M | re.S)
    assert first is not None
    layers = re.findall(r'^  "(.+)",$', first.group(1), re.M)
    in_code = [sorted(part.strip().removeprefix("pyspark_streamtest.")
                      for part in layer.split("|")) for layer in layers]
    assert [sorted(floor) for floor in on_page] == in_code
    for room in re.findall(r"^\| `driver/(\w+)(?:/|\.py)` \|", page, re.M):
        assert (PACKAGE / "driver" / room).is_dir() or (PACKAGE / "driver" / f"{room}.py").is_file()
