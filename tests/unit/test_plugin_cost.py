"""What the plugin costs a project that never uses Spark (issue 37): pytest loads it on
every run, so loading it imports nothing heavy and starts no process. PySpark comes with
the first fixture or face name that needs it. What a one-test run costs with and without
the plugin, in seconds, is a figure of the benchmarks (``benchmarks/inner_loop.py``), not
a bound of a test: under load the same run's CPU time varied by 0.4 s here."""

from __future__ import annotations

import textwrap

from tests.helpers import python_json

pytest_plugins = ["pytester"]

HEAVY = ["pyspark", "py4j", "pandas", "pyarrow", "hypothesis"]

# Run first in a fresh interpreter: records every process started from then on.
RECORD_PROCESSES = textwrap.dedent("""
    import subprocess

    STARTED = []

    class _Recorded(subprocess.Popen):
        def __init__(self, args, *rest, **options):
            STARTED.append(args)
            super().__init__(args, *rest, **options)

    subprocess.Popen = _Recorded
""")


def fresh(code: str) -> dict:
    """Run ``code`` (after RECORD_PROCESSES) in a new interpreter; what it printed as
    JSON on its last line."""
    found: dict = python_json(RECORD_PROCESSES + textwrap.dedent(code))
    return found


def test_importing_the_plugin_imports_nothing_heavy_and_starts_no_process():
    found = fresh(f"""
        import json, sys
        import pyspark_streamtest.plugin
        print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules],
                           "started": STARTED}}))
    """)
    assert found == {"heavy": [], "started": []}


def test_the_face_imports_pyspark_with_the_first_name_that_needs_it():
    """The check above can fail: a face name that needs PySpark brings it in."""
    found = fresh("""
        import json, sys
        import pyspark_streamtest
        before = "pyspark" in sys.modules
        listed = set(pyspark_streamtest.__all__) <= set(dir(pyspark_streamtest))
        from pyspark_streamtest import TopologyTestDriver
        print(json.dumps({"before": before, "after": "pyspark" in sys.modules,
                          "listed": listed,
                          "same": TopologyTestDriver is pyspark_streamtest.TopologyTestDriver}))
    """)
    assert found == {"before": False, "after": True, "listed": True, "same": True}


def test_an_exception_of_a_module_imported_behind_the_face_gets_its_name_on_first_use():
    """``UnsupportedFeatureError`` lives with PySpark-importing code: when the driver
    imports it, the next name the face hands out names it on the face too."""
    found = fresh("""
        import json
        import pyspark_streamtest
        from pyspark_streamtest.core.features import UnsupportedFeatureError
        pyspark_streamtest.Topology  # any name of the face, first used
        print(json.dumps([UnsupportedFeatureError.__module__,
                          pyspark_streamtest.UnsupportedFeatureError
                          is UnsupportedFeatureError]))
    """)
    assert found == ["pyspark_streamtest", True]


CONFTEST_RECORDING = RECORD_PROCESSES + textwrap.dedent(f"""
    import sys

    def pytest_sessionfinish(session):
        heavy = [m for m in {HEAVY[:4]!r} if m in sys.modules]
        (session.config.rootpath / "seen.txt").write_text(repr((heavy, STARTED)))
""")


def test_a_run_that_uses_no_spark_imports_none_of_it_and_starts_no_process(pytester):
    """A whole session, report header included (hypothesis is left out here: its own
    pytest plugin may import it)."""
    pytester.makeconftest(CONFTEST_RECORDING)
    pytester.makepyfile(test_one="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pyspark-streamtest *: PySpark *, Java *, Python *"])
    assert (pytester.path / "seen.txt").read_text() == "([], [])"
