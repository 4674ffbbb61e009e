"""The plugin's options, each in three places: the command line (``--streamtest-...``),
the ini file (the same name with
underscores, ``streamtest_master``, in ``[tool.pytest.ini_options]``, ``pytest.ini``,
``tox.ini`` or ``setup.cfg``) and, for the master only, an environment variable.

Which value holds: the command line's, else the environment variable's, else the ini
file's, else the default. ``streamtest_conf`` settings add up instead: the ini file's,
then the command line's, so the command line wins for a key both set. A flag given on
the command line can only turn its option on; ``-o streamtest_oracle=false`` overrides
an ini file's ``true``.

``pytest_configure`` resolves every option once (:func:`resolve_options`) and writes the
value back, so ``config.getoption("streamtest_master")`` (or any of its spellings) gives
the value in force, wherever it came from. Imports nothing heavy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from ..errors import hide_our_frames

__tracebackhide__ = hide_our_frames

Kind = Literal["string", "int", "bool", "conf", "list", "dir"]

# pytest reads ini integers itself (and native TOML integers) from 8.4 on.
_INI_INT = "int" if pytest.version_tuple >= (8, 4) else "string"


@dataclass(frozen=True)
class Option:
    """One option: its command-line flag, kind, default and description."""

    flag: str
    kind: Kind
    default: Any
    help: str
    metavar: str | None = None
    env: str | None = None

    @property
    def name(self) -> str:
        """The ini option's name, and the ``config.option`` attribute's."""
        return self.flag.removeprefix("--").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option(
        "--streamtest-master", "string", None, metavar="URL",
        env="STREAMTEST_MASTER",
        help="Spark master of the 'spark' fixture, e.g. spark://127.0.0.1:7077 from "
        "`pyspark-streamtest cluster start` (default: local[2]; under pytest-xdist "
        "local[N] with N = CPU cores per worker, 1 to 2).",
    ),
    Option(
        "--streamtest-conf", "conf", [], metavar="KEY=VALUE",
        help="Extra Spark setting for the 'spark' fixture; repeatable (ini: one per "
        "line; the command line wins for a key both set; default: none).",
    ),
    Option(
        "--streamtest-ignore-option", "list", [], metavar="NAME",
        help="A source option (maxOffsetsPerTrigger, maxFilesPerTrigger...) every "
        "topology_driver.from_app(...) driver ignores, as if each call passed it in "
        "ignore_options=; repeatable (ini: one per line; the two add up; default: none).",
    ),
    Option(
        "--streamtest-jvm-logs", "bool", False,
        help="Let the 'spark' fixture's JVM log warnings and errors with their stack "
        "traces, and PySpark its JSON logs of errors (default: errors only, one line "
        "each, none for failures a driver reports).",
    ),
    Option(
        "--streamtest-warm-jvm", "string", "auto", metavar="auto|on|off",
        env="STREAMTEST_WARM_JVM",
        help="Keep the local Spark JVM running after the run, for the next runs to attach "
        "to instead of starting one (each run gets a SparkContext of its own; a JVM ends "
        "after 15 idle minutes, $STREAMTEST_WARM_JVM_IDLE seconds). auto: on, except "
        "where $CI is set (default: auto).",
    ),
    Option(
        "--streamtest-connect", "bool", False, env="STREAMTEST_CONNECT",
        help="Run the tests over Spark Connect: the 'spark' fixture (and a driver made "
        "without spark=) is a Connect session of a local server in this process's JVM, "
        "and the process is in Connect mode, as with SparkSession.builder.remote(...) "
        "(PySpark 4.0+; default: off; env: 1/0).",
    ),
    Option(
        "--streamtest-cpu-load", "int", 0, metavar="N",
        help="Busy processes kept running during streamtest_determinism tests "
        "(default 0).",
    ),
    Option(
        "--streamtest-timeline-dir", "dir", None, metavar="DIR",
        help="Write an SVG timeline picture per driver of each failing test to DIR (in "
        "an ini file: relative to its folder); the JUnit XML report carries its path as "
        "the property 'streamtest_timeline'.",
    ),
    Option(
        "--streamtest-durations", "int", None, metavar="N",
        help="List the N slowest tests (0: all) with their time split into Spark's "
        "micro-batches, query starts and stops, state reads and the rest (default: "
        "off).",
    ),
    Option(
        "--streamtest-update-golden", "bool", False,
        help="Write golden timeline files instead of comparing with them.",
    ),
    Option(
        "--streamtest-oracle", "bool", False,
        help="Differential oracle: run every query the driver runs again by Spark alone "
        "(Spark's own clock and memory sink) and fail a test at the first batch that "
        "differs (default: off; env STREAMTEST_ORACLE=1 turns on the comparison "
        "without the summary).",
    ),
    Option(
        "--streamtest-oracle-min-tests", "int", 0, metavar="N",
        help="With --streamtest-oracle: fail the run if fewer than N tests compared at "
        "least one batch (default: 0).",
    ),
    Option(
        "--streamtest-mutate", "bool", False,
        help="Mutation testing: after the tests pass, run them again once per mutant of "
        "the streaming decisions their topologies make (watermark delays, windows, join "
        "bounds and types, output modes, dedup keys, triggers, filter bounds) and "
        "report the mutants no test noticed (default: off).",
    ),
    Option(
        "--streamtest-mutate-min-score", "string", None, metavar="PERCENT",
        help="With --streamtest-mutate: fail the run if killed / (killed + survived) is "
        "below PERCENT (default: no minimum).",
    ),
    Option(
        "--streamtest-mutate-max", "int", None, metavar="N",
        help="With --streamtest-mutate: run at most N mutants, a sample drawn with "
        "--streamtest-mutate-seed (default: all).",
    ),
    Option(
        "--streamtest-mutate-seed", "int", 0, metavar="N",
        help="The seed of the --streamtest-mutate-max sample (default: 0).",
    ),
    Option(
        "--streamtest-mutate-json", "string", None, metavar="PATH",
        help="With --streamtest-mutate: write every mutant's fate as JSON to PATH.",
    ),
    Option(
        "--streamtest-mutate-junit", "string", None, metavar="PATH",
        help="With --streamtest-mutate: write a JUnit XML report to PATH, a test case "
        "per mutant (a survivor fails, an invalid mutant is skipped).",
    ),
)

_BY_NAME = {option.name: option for option in OPTIONS}
_RESOLVED = pytest.StashKey[dict[str, Any]]()


def add_options(parser: pytest.Parser) -> None:
    """Add every option to the plugin's group of the command line, and to the ini
    options."""
    group = parser.getgroup("pyspark-streamtest", "pyspark-streamtest (Spark streaming tests)")
    for option in OPTIONS:
        # default None: "not on the command line", so that the ini file can speak
        spec: dict[str, Any] = {"dest": option.name, "default": None}
        if option.kind == "bool":
            spec["action"] = "store_true"
        else:
            spec["metavar"] = option.metavar
            if option.kind in ("conf", "list"):
                spec["action"] = "append"
            elif option.kind == "int":
                spec["type"] = int
        where = f"ini: {option.name}" + (f"; env {option.env}" if option.env else "")
        group.addoption(option.flag, help=f"{option.help} [{where}]",
                        **spec)
        parser.addini(option.name, f"{option.help} [{option.flag}]", **_ini_spec(option))


def _ini_spec(option: Option) -> dict[str, Any]:
    if option.kind == "bool":
        return {"type": "bool", "default": False}
    if option.kind in ("conf", "list"):
        return {"type": "linelist", "default": []}
    if option.kind == "int":
        return {"type": _INI_INT, "default": None}
    return {"type": "string", "default": ""}


def setting(config: pytest.Config, name: str) -> Any:
    """The value in force of the option ``name`` (``"streamtest_master"``): resolved by
    :func:`resolve_options` when pytest configured, else now (a config pytest did not
    configure, as ``pytester.parseconfig`` makes)."""
    resolved = config.stash.get(_RESOLVED, None)
    if resolved is not None:
        return resolved[name]
    return _resolve(config, _BY_NAME[name])


def resolve_options(config: pytest.Config) -> None:
    """Resolve every option (command line, environment, ini file, default), refuse a
    malformed value with a usage error naming it, and write the values back to
    ``config.option``."""
    resolved = {option.name: _resolve(config, option) for option in OPTIONS}
    config.stash[_RESOLVED] = resolved
    for name, value in resolved.items():
        setattr(config.option, name, value)


def _resolve(config: pytest.Config, option: Option) -> Any:
    given = getattr(config.option, option.name, None)
    if option.kind in ("conf", "list"):
        items = [*config.getini(option.name), *(given or [])]
        if option.kind == "conf":
            parse_conf(items)  # a malformed item is a usage error now, not when Spark starts
        return items
    if given is not None:
        return given
    if option.env and os.environ.get(option.env):
        return os.environ[option.env]
    try:
        value = config.getini(option.name)
    except pytest.UsageError as error:  # pytest's message does not say which option
        raise pytest.UsageError(f"ini option {option.name}: {error}") from None
    if option.kind == "bool":
        return bool(value)
    if value is None or value == "":
        return option.default
    if option.kind == "int":
        try:
            return int(value)
        except ValueError:
            raise pytest.UsageError(
                f"ini option {option.name} expects an integer, got {value!r}") from None
    if option.kind == "dir":
        folder = config.inipath.parent if config.inipath else config.rootpath
        return str(folder / Path(value))
    return value


def parse_conf(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict, a later item winning for its key."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(
                f"--streamtest-conf (or the ini option streamtest_conf) expects "
                f"KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf
