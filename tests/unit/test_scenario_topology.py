"""Scenario files name their topology as ``module:function``, found explicitly: by import
name first, then as a module file in the scenario's folder, then in the current folder.
Every failure is a typed error that lists what was tried."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from pyspark_streamtest import ScenarioError, StreamTestError
from pyspark_streamtest.gates.scenario import resolve_topology


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_module_file_beside_the_scenario_is_loaded_without_touching_sys_path(tmp_path):
    name = unique("topologies")
    write(tmp_path, f"{name}.py", "def counts(t):\n    return 'counts'\n")
    path_before = list(sys.path)
    function = resolve_topology(f"{name}:counts", search=[tmp_path])
    assert function(None) == "counts"
    assert sys.path == path_before
    assert sys.modules[name].__file__ == str(tmp_path / f"{name}.py")
    assert resolve_topology(f"{name}:counts", search=[tmp_path]) is function  # reused


def test_dotted_names_find_packages_and_later_folders(tmp_path):
    first, second = tmp_path / "scenario_dir", tmp_path / "cwd"
    first.mkdir()
    package = unique("pipelines")
    write(second, f"{package}/clicks.py", "class Jobs:\n    @staticmethod\n"
                                         "    def windowed(t):\n        return 7\n")
    function = resolve_topology(f"{package}.clicks:Jobs.windowed", search=[first, second])
    assert function(None) == 7


def test_an_installed_module_wins_and_needs_no_search(tmp_path):
    write(tmp_path, "json.py", "def loads(t):\n    raise AssertionError('not this one')\n")
    import json

    assert resolve_topology("json:loads", search=[tmp_path]) is json.loads


def test_a_missing_module_lists_every_place_tried(tmp_path):
    name = unique("nowhere")
    with pytest.raises(ScenarioError) as caught:
        resolve_topology(f"{name}.sub:build", search=[tmp_path / "a", tmp_path / "b"])
    message = str(caught.value)
    assert f"cannot find module '{name}.sub' of topology '{name}.sub:build'" in message
    assert f"import '{name}.sub' (sys.path)" in message
    for folder in ("a", "b"):
        assert str(tmp_path / folder / name / "sub.py") in message
        assert str(tmp_path / folder / name / "sub" / "__init__.py") in message
    assert isinstance(caught.value, StreamTestError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("source", "spec_tail", "message"),
    [
        ("x = 1\n", ":build", r"has no function 'build' \(topology '.*', module file .*\.py\)"),
        ("build = 3\n", ":build", r"has no function 'build'"),
        ("raise RuntimeError('boom')\n", ":build",
         r"loading .*\.py for topology '.*' failed: RuntimeError: boom"),
    ],
    ids=["no-such-attribute", "attribute-not-callable", "module-raises"],
)
def test_a_module_that_does_not_give_a_function(tmp_path, source, spec_tail, message):
    name = unique("broken")
    write(tmp_path, f"{name}.py", source)
    with pytest.raises(ScenarioError, match=message):
        resolve_topology(name + spec_tail, search=[tmp_path])
    if "raises" in source:
        assert name not in sys.modules


def test_an_importable_module_with_a_missing_dependency_says_so(tmp_path, monkeypatch):
    name = unique("needs_dep")
    write(tmp_path, f"{name}.py", "import surely_not_installed_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ScenarioError, match=(
            rf"importing module '{name}' of topology '{name}:f' failed: "
            "No module named 'surely_not_installed_dependency'")):
        resolve_topology(f"{name}:f")


@pytest.mark.parametrize("spec", ["no_colon", ":f", "module:", ""])
def test_the_spec_must_be_module_colon_function(spec):
    with pytest.raises(ScenarioError, match="must be 'module:function'"):
        resolve_topology(spec)
