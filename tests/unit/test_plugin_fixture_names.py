"""The plugin's fixtures are named ``streamtest_*``, but for its two nouns, ``spark`` and
``topology_driver``, so that they collide with no other plugin's or project's fixture.
No name of a pre-release spelling is left (in a child pytest, no Spark session started:
nothing here asks for a session)."""

from __future__ import annotations

import re

pytest_plugins = ["pytester"]

CANNED = ["clickstream", "customers_cdc", "iot_readings", "orders_payments"]
OURS = {"spark", "topology_driver", "streamtest_golden",
        *(f"streamtest_{stream}" for stream in CANNED)}


def _our_fixtures(text: str) -> set[str]:
    """The fixtures ``pytest --fixtures -v`` lists from this plugin's folder."""
    listed = re.findall(r"^(\w+)(?: \[\w+ scope\])? -- (\S+):\d+$", text, flags=re.M)
    return {name for name, where in listed if "pyspark_streamtest/plugin/" in where}


def test_fixtures_lists_exactly_our_names_all_prefixed_but_the_two_nouns(pytester):
    result = pytester.runpytest_inprocess("--fixtures", "-v", "-p", "no:cacheprovider")
    listed = _our_fixtures(result.stdout.str())
    ours = {name for name in listed if not name.startswith("_")}
    assert ours == OURS
    # an autouse helper shows only under -v, and under our prefix
    assert all(name.startswith("_streamtest_") for name in listed - ours)
    assert {name for name in ours if not name.startswith("streamtest_")} == {
        "spark", "topology_driver"}
    assert "Deprecated" not in result.stdout.str()


def test_the_pre_release_names_are_gone(pytester):
    """``golden`` (pytest-golden's fixture too) and the unprefixed canned streams are not
    ours: a test asking for one gets pytest's own "fixture not found"."""
    pytester.makepyfile(test_old="""
        def test_old(golden):
            pass

        def test_old_stream(clickstream):
            pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*fixture 'golden' not found*",
                                 "*fixture 'clickstream' not found*"])


def test_the_golden_fixture_writes_then_compares(pytester):
    pytester.makepyfile(test_new="""
        def test_new(streamtest_golden):
            streamtest_golden([], "quiet")
    """)
    written = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                           "--streamtest-update-golden", "-W", "error")
    written.assert_outcomes(passed=1)
    assert (pytester.path / "golden" / "quiet.timeline").is_file()
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "error").assert_outcomes(
        passed=1)


def test_a_project_s_own_golden_fixture_is_its_own(pytester):
    """A project (or pytest-golden) with a ``golden`` of its own gets its own."""
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def golden():
            return "the project's golden"
    """)
    pytester.makepyfile(test_own="""
        def test_own(golden):
            assert golden == "the project's golden"
    """)
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "error").assert_outcomes(
        passed=1)
