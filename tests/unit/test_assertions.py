"""Side-by-side differences of emitted values."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pyspark_streamtest import OutputMismatchError, assert_values_equal
from pyspark_streamtest.core.equality._compare import Comparison, compare
from pyspark_streamtest.core.equality._diff import report
from pyspark_streamtest.core.equality._outcome import NONE, Difference, Field, OffBy, Outcome, Row


def test_equal_values_pass_in_order_or_ignoring_it():
    rows = [{"user": "a", "count": 2}, {"user": "b", "count": 1}]
    assert_values_equal(rows, list(rows))
    assert_values_equal(rows, rows[::-1], ignore_order=True)
    utc = datetime(2024, 1, 1, tzinfo=timezone.utc)
    plus_one = utc.astimezone(timezone(timedelta(hours=1)))
    assert_values_equal([{"at": utc}], [{"at": plus_one}])  # the same instant


def test_mismatch_shows_both_sides_and_the_differing_fields():
    with pytest.raises(OutputMismatchError) as caught:
        assert_values_equal(
            [{"user": "a", "count": 2}, {"user": "b", "count": 2}, {"user": "c", "count": 1}],
            [{"user": "a", "count": 2}, {"user": "b", "count": 1}],
            title="output 'counts'",
        )
    assert str(caught.value).splitlines() == [
        "output 'counts': 2 values expected, 3 read; 2 differ",
        "      #  expected                actual",
        "      0  {\"count\":2,\"user\":\"a\"}  {\"count\":2,\"user\":\"a\"}",
        "  *   1  {\"count\":1,\"user\":\"b\"}  {\"count\":2,\"user\":\"b\"}    count: 1 != 2",
        "  *   2  -                       {\"count\":1,\"user\":\"c\"}",
    ]


def test_missing_and_unexpected_fields_and_order():
    with pytest.raises(OutputMismatchError, match=r"user: missing, who: unexpected"):
        assert_values_equal([{"who": "a"}], [{"user": "a"}])
    with pytest.raises(OutputMismatchError, match=r"2 values expected, 2 read; 2 differ\n"):
        assert_values_equal([1, 2], [2, 1])


def test_actual_values_name_the_batch_that_emitted_them():
    with pytest.raises(OutputMismatchError) as caught:
        assert_values_equal([{"n": 2}, {"n": 1}], [{"n": 1}, {"n": 3}], ignore_order=True,
                            batch_ids=[4, 7])
    lines = str(caught.value).splitlines()
    assert lines[2] == '      0  {"n":1}   (batch 7) {"n":1}'
    assert lines[3] == '  *   1  {"n":3}   (batch 4) {"n":2}    n: 3 != 2'
    with pytest.raises(ValueError, match="batch_ids has 1 entries for 2 values"):
        assert_values_equal([1, 2], [1, 2], batch_ids=[0])


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("2024-01-01T00:10:00Z", "2024-01-01T00:10:00.000Z"),
        ("2024-01-01T00:10:00.000Z", "2024-01-01T00:10:00Z"),
        ("2024-01-01T01:10:00.000+01:00", "2024-01-01T00:10:00Z"),
        ("2024-01-01T01:10:00+0100", "2024-01-01T00:10:00Z"),
        ("2023-12-31T19:10:00-05", "2024-01-01T00:10:00Z"),
        ("2024-01-01T00:10:00.000000001Z", "2024-01-01T00:10Z"),
        ("2024-01-01 00:10:00Z", datetime(2024, 1, 1, 0, 10, tzinfo=timezone.utc)),
        ({"end": "2024-01-01T00:10:00Z"}, {"end": datetime(2024, 1, 1, 0, 10, tzinfo=timezone.utc)}),
    ],
    ids=["no-millis-vs-millis", "millis-vs-no-millis", "offset", "compact-offset",
         "hour-offset", "nanos", "space-vs-datetime", "nested"],
)
def test_instant_strings_compare_as_instants(actual, expected):
    assert_values_equal([actual], [expected])


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("2024-01-01T00:10:00Z", "2024-01-01T00:10:01Z"),
        ("2024-01-01T00:10:00", "2024-01-01T00:10:00Z"),  # no zone: a plain string
        ("2024-01-01T00:10:00+01:00", "2024-01-01T00:10:00Z"),
    ],
    ids=["other-second", "no-zone-is-text", "other-instant"],
)
def test_different_instants_and_zoneless_text_differ(actual, expected):
    with pytest.raises(OutputMismatchError):
        assert_values_equal([actual], [expected])


def test_wide_values_are_shown_a_field_per_line_and_wrapped():
    """No line of the report is wider than 100 characters: values too wide for the
    side-by-side table are compared field by field, long texts wrapped."""
    long_x, long_y = "/" + "x" * 150, "/" + "y" * 150
    with pytest.raises(OutputMismatchError) as caught:
        assert_values_equal(
            [{"user": "a", "url": long_x}, {"user": "b", "url": "/"}, {"n": 1}],
            [{"user": "a", "url": long_y}, {"user": "b", "url": "/"}],
            title="output 'counts'", batch_ids=[0, 0, 1])
    lines = str(caught.value).splitlines()
    assert max(map(len, lines)) <= 100
    assert lines[0] == ("output 'counts': 2 values expected, 3 read; 2 differ "
                        "(wide values: a field per line)")
    assert lines[1].startswith('  *   0  (batch 0)    url: "/yyy') and lines[1].endswith("...")
    assert lines[3].startswith('        * url    "/yyyy') and lines[3].endswith('"/' + "x" * 36)
    assert "".join(line[17:55] for line in lines[3:8]).replace(" ", "") == f'"{long_y}"'
    assert lines[8] == '          user   "a"                                     "a"'
    assert lines[9] == '      1  (batch 0)  {"url":"/","user":"b"}'
    assert lines[10] == "  *   2  (batch 1)  (not expected)"
    assert lines[12].split() == ["*", "n", "-", "1"]


def test_an_empty_value_among_wide_ones_is_shown_whole():
    """A value with no fields (``{}``) in a report of wide values has nothing to list
    field by field: its line says what each side held (it raised TypeError before)."""
    wide = {"url": "/" + "x" * 150}
    with pytest.raises(OutputMismatchError) as caught:
        assert_values_equal([wide, {}], [wide])  # read, expected
    lines = str(caught.value).splitlines()
    assert lines[0].endswith("(wide values: a field per line)")
    assert lines[-2:] == ["  *   1  (not expected)", "          expected -, actual {}"]


# --- comparing once, rendering once -------------------------------------------------------------
def test_comparing_gives_what_differs_as_data_without_a_report():
    outcome = compare([{"user": "b", "avg": 0.31}],
                      [{"user": "b", "avg": 0.3}, {"user": "c", "avg": 1.0}],
                      Comparison.of(rtol=1e-9))
    first, second = outcome.rows
    assert (outcome.expected, outcome.read, outcome.differing) == (2, 1, 2)
    assert outcome.tolerances == (1e-9, 0.0) and not outcome.same
    assert first.differences == (
        Difference("avg", 0.3, 0.31, OffBy(pytest.approx(0.01), pytest.approx(3.1e-10))),)
    assert first.fields == (Field("avg", 0.3, 0.31, same=False),
                            Field("user", "b", "b", same=True))
    assert second.actual is NONE and second.differences == ()
    assert [(field.name, field.actual is NONE) for field in second.fields] == [
        ("avg", True), ("user", True)]


def test_the_report_renders_an_outcome_alone_and_decides_nothing():
    """Made by hand: the report marks a position different because the outcome says so,
    even where its two values print the same."""
    outcome = Outcome(
        rows=(Row(1, 1, 4, same=False),
              Row({"x": 2.0}, NONE, None, same=False, fields=(Field("x", 2.0, NONE, False),)),
              Row(2.0, 2.5, 5, same=False, differences=(
                  Difference(None, 2.0, 2.5, OffBy(0.5, 0.25)),))),
        expected=3, read=2, tolerances=(0.0, 0.25), ignored_columns=("id",))
    assert report(outcome, "made by hand", show_batches=True).splitlines() == [
        "made by hand: 3 values expected, 2 read; 3 differ; compared with rtol=0.0, atol=0.25;"
        " ignoring columns: id",
        "      #  expected   actual",
        "  *   0  1          (batch 4) 1",
        '  *   1  {"x":2.0}  -',
        "  *   2  2.0        (batch 5) 2.5    off by 0.5, allowed 0.25",
    ]
