"""What a release needs that can be checked without building one: the version in one
place and the same everywhere it is read, the license files, the changelog's entry,
the package metadata. ``.ci/release-check`` builds the artifacts and uses them."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pyspark_streamtest

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "src" / "pyspark_streamtest" / "__init__.py"
# sha256 of the Apache License 2.0 as the ASF publishes it (LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with (ROOT / "pyproject.toml").open("rb") as file:
        return dict(tomllib.load(file))


def test_the_version_has_one_place_and_hatch_reads_it(pyproject):
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert (ROOT / pyproject["tool"]["hatch"]["version"]["path"]).resolve() == INIT
    assert VERSION_LINE.findall(INIT.read_text(encoding="utf-8")) == [
        pyspark_streamtest.__version__]
    others = [str(path.relative_to(ROOT)) for path in (ROOT / "src").rglob("*.py")
              if path != INIT and "__version__ =" in path.read_text(encoding="utf-8")]
    assert others == []


def test_the_version_is_a_release_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", pyspark_streamtest.__version__)


def test_the_installed_metadata_has_the_same_version():
    assert importlib.metadata.version("pyspark-streamtest") == pyspark_streamtest.__version__


def test_the_command_prints_the_version(capsys):
    from pyspark_streamtest.gates.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"pyspark-streamtest {pyspark_streamtest.__version__}\n"


def test_the_changelog_has_an_entry_for_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = re.escape(pyspark_streamtest.__version__)
    assert re.search(rf"^## \[{version}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.MULTILINE)
    assert re.search(rf"^\[{version}\]: https://", changelog, re.MULTILINE)
    assert re.search(r"^## \[Unreleased\]$", changelog, re.MULTILINE)


def test_the_license_is_the_apache_license_2_0_text(pyproject):
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert set(pyproject["project"]["license-files"]) == {"LICENSE", "NOTICE"}


def test_the_notice_names_the_project_and_what_it_ports():
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    assert notice.startswith("pyspark-streamtest\nCopyright ")
    assert "Apache Spark" in notice and "tests/spark/parity/" in notice
    assert (ROOT / "tests" / "spark" / "parity").is_dir()


def test_the_metadata_has_urls_and_classifiers(pyproject):
    project = pyproject["project"]
    urls = project["urls"]
    assert {"Homepage", "Source", "Issues", "Changelog", "Documentation"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = project["classifiers"]
    assert "Framework :: Pytest" in classifiers
    # A license expression (PEP 639) and a license classifier may not both be given.
    assert not [c for c in classifiers if c.startswith("License ::")]
    minimum = project["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minimum}" in classifiers


def test_the_release_check_script_is_bash_that_stops_on_errors():
    script = ROOT / ".ci" / "release-check"
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert "trap " in text
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0


@pytest.mark.skipif(sys.platform == "win32", reason="file modes")
def test_the_release_check_script_is_executable():
    assert (ROOT / ".ci" / "release-check").stat().st_mode & 0o111
