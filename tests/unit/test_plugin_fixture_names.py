"""The plugin's fixtures are named ``streamtest_*`` (but ``spark`` and
``topology_driver``), so that they collide with no other plugin's or project's; the
0.1 names work until the next release, warning with the new name (in a child pytest,
no Spark session started: the canned streams import PySpark, nothing more)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CANNED = ["clickstream", "customers_cdc", "iot_readings", "orders_payments"]


def test_fixtures_lists_the_new_names_and_the_deprecated_ones(pytester):
    result = pytester.runpytest_inprocess("--fixtures", "-p", "no:cacheprovider")
    text = result.stdout.str()
    for name in ["topology_driver", "streamtest_golden",
                 *(f"streamtest_{stream}" for stream in CANNED)]:
        assert f"\n{name} -- " in text, name
    assert "\nspark [session scope] -- " in text
    for old in ["golden", *CANNED]:
        result.stdout.fnmatch_lines([
            f"{old} -- *", f"    Deprecated: the old name of ``streamtest_{old}``, until the "
            "next release.",
        ])


def test_the_old_golden_name_warns_naming_the_new_one_and_works_the_same(pytester):
    pytester.makepyfile(test_old="""
        def test_both(golden, streamtest_golden):
            golden([], "by_old_name")
            streamtest_golden([], "by_new_name")
    """)
    written = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                           "--streamtest-update-golden")
    written.assert_outcomes(passed=1, warnings=1)
    written.stdout.fnmatch_lines([
        "*DeprecationWarning: the fixture 'golden' of pyspark-streamtest is deprecated "
        "and goes in the next release: use 'streamtest_golden'*",
    ])
    folder = pytester.path / "golden"
    assert (folder / "by_old_name.timeline").read_text() == (
        folder / "by_new_name.timeline").read_text()
    # compared, not written, without the option: both names find their file
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1,
                                                                           warnings=1)
    # and under -W error the old name is an error: the warning is a real warning
    strict = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "-W", "error::DeprecationWarning")
    strict.assert_outcomes(errors=1)


def test_the_new_golden_name_does_not_warn(pytester):
    pytester.makepyfile(test_new="""
        def test_new(streamtest_golden):
            streamtest_golden([], "quiet")
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--streamtest-update-golden",
                                          "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("stream", CANNED)
def test_each_old_canned_stream_name_warns_and_gives_the_same_stream(pytester, stream):
    pytester.makepyfile(test_old=f"""
        def test_same(streamtest_{stream}, {stream}):
            # the same fixture: in one test, the very same stream
            assert {stream} is streamtest_{stream}
            assert {stream}.name == "{stream}" and {stream}.records
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        f"*DeprecationWarning: the fixture '{stream}' of pyspark-streamtest is "
        f"deprecated and goes in the next release: use 'streamtest_{stream}'*",
    ])


def test_a_project_s_own_fixture_of_an_old_name_wins_without_a_warning(pytester):
    """A project (or pytest-golden) with a ``golden`` of its own: conftest fixtures
    override plugin fixtures, so the project gets its own, and no deprecation."""
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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=1)
