"""Tolerances, pytest.approx, ignored columns and multisets in assert_values_equal and
TestOutputTopic.assert_values (no Spark: the topic reads a queue filled by hand)."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import Row

from pyspark_streamtest import OutputMismatchError, TestOutputTopic, assert_values_equal
from pyspark_streamtest.core.records import TestRecord
from pyspark_streamtest.driver.queries._history import History
from pyspark_streamtest.driver.topics.output_topic import OutputLink
from pyspark_streamtest.errors import InvalidArgumentError, InvalidArgumentTypeError


def mismatch(actual, expected, **options) -> list[str]:
    with pytest.raises(OutputMismatchError) as caught:
        assert_values_equal(actual, expected, **options)
    return str(caught.value).splitlines()


# --- tolerances -----------------------------------------------------------------------------
def test_floats_compare_exactly_by_default_and_the_diff_shows_both():
    lines = mismatch([{"id": 1, "avg": 0.1 + 0.2}], [{"id": 1, "avg": 0.3}])
    assert lines[0] == "values: 1 values expected, 1 read; 1 differ"  # no tolerance named
    assert lines[2].endswith("avg: 0.3 != 0.30000000000000004")
    lines = mismatch([1.0], [1])  # exactly, an int is not a float
    assert lines[2].split() == ["*", "0", "1", "1.0"]


def test_rtol_passes_what_is_close_and_the_message_names_the_tolerances():
    assert_values_equal([{"id": 1, "avg": 0.1 + 0.2}], [{"id": 1, "avg": 0.3}], rtol=1e-9)
    assert_values_equal([{"avg": 2.0}], [{"avg": 2}], rtol=1e-9)  # numbers, one a float
    lines = mismatch([{"avg": 0.31}], [{"avg": 0.3}], rtol=1e-9, batch_ids=[3])
    assert lines[0] == ("values: 1 values expected, 1 read; 1 differ; "
                        "compared with rtol=1e-09, atol=0.0")
    assert lines[2] == ('  *   0  {"avg":0.3}  (batch 3) {"avg":0.31}    '
                        "avg: 0.3 != 0.31 (off by 0.01, allowed 3.1e-10)")


def test_atol_is_an_absolute_bound():
    assert_values_equal([100.05], [100.0], atol=0.1)
    lines = mismatch([100.05], [100.0], atol=0.01)
    assert lines[0].endswith("; compared with rtol=0.0, atol=0.01")
    assert lines[2].endswith("off by 0.05, allowed 0.01")  # values that are no rows


@given(a=st.floats(allow_nan=False, allow_infinity=False, width=32),
       b=st.floats(allow_nan=False, allow_infinity=False, width=32),
       rtol=st.sampled_from([0.0, 1e-9, 1e-3, 0.5]),
       atol=st.sampled_from([0.0, 1e-12, 1e-3, 1.0]))
def test_numbers_pass_exactly_when_math_isclose_says_so(a, b, rtol, atol):
    if rtol == atol == 0.0:
        rtol = 1e-300  # a tolerance in force; exact comparison is tested above
    close = math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    try:
        assert_values_equal([{"x": a}], [{"x": b}], rtol=rtol, atol=atol)
        passed = True
    except OutputMismatchError:
        passed = False
    assert passed is close


def test_tolerances_reach_every_float_of_a_nested_value():
    actual = [{"user": "a", "window": {"start": datetime(2024, 1, 1, tzinfo=timezone.utc)},
               "stats": [{"avg": 0.1 + 0.2}, (1.0000000001, 2.0)],
               "row": Row(total=10.000000001, n=3)}]
    expected = [{"user": "a", "window": {"start": "2024-01-01T00:00:00Z"},
                 "stats": [{"avg": 0.3}, [1.0, 2]], "row": {"total": 10.0, "n": 3}}]
    assert_values_equal(actual, expected, rtol=1e-9)
    lines = mismatch(actual, expected)  # exactly: the row and the stats differ
    assert lines[1].startswith('  *   0    row: {"n":3,"total":10.0} != '
                               '{"n":3,"total":10.000000001}, stats: ')
    expected[0]["stats"][1][1] = 2.1  # one float deep inside is off
    lines = mismatch(actual, expected, rtol=1e-9)
    assert lines[1].startswith('  *   0    stats: [{"avg":0.3},[1.0,2.1]] != ')
    assert lines[4].split() == ["row.total", "10.0", "10.000000001"]  # close: no *


def test_a_spark_row_compares_as_its_fields():
    assert_values_equal([{"user": "a", "count": 2}], [Row(user="a", count=2)])
    lines = mismatch([{"user": "a", "count": 2}], [Row(user="a", count=3)])
    assert lines[2].endswith("count: 3 != 2")


def test_nan_equals_nan_and_infinities_themselves():
    nan, inf = float("nan"), float("inf")
    assert_values_equal([{"x": nan, "y": inf}], [{"x": nan, "y": inf}], rtol=1e-9)
    mismatch([{"x": nan}], [{"x": 1.0}], atol=10.0)
    mismatch([{"y": inf}], [{"y": -inf}], atol=10.0)


# --- pytest.approx --------------------------------------------------------------------------
def test_approx_anywhere_in_an_expected_value_uses_its_own_tolerance():
    actual = [{"user": "a", "stats": {"avg": 0.1 + 0.2, "all": [1.0000001, 5]}}]
    assert_values_equal(actual, [{"user": "a", "stats": {
        "avg": pytest.approx(0.3), "all": [pytest.approx(1.0), 5]}}])
    assert_values_equal([{"stats": {"avg": 0.1 + 0.2, "n": 5}}],
                        [{"stats": pytest.approx({"avg": 0.3, "n": 5})}])
    assert_values_equal([0.1 + 0.2, 2.0], [pytest.approx(0.3), pytest.approx(2)])


def test_an_approx_that_fails_is_shown_as_approx():
    lines = mismatch([{"a": 0.31}], [{"a": pytest.approx(0.3)}])
    assert lines[2] == ('  *   0  {"a":approx(0.3 ± 3.0e-07)}  {"a":0.31}    '
                        "a: approx(0.3 ± 3.0e-07) != 0.31")
    mismatch([{"avg": "0.3"}], [{"avg": pytest.approx(0.3)}])  # text is no number


def test_approx_values_pair_up_ignoring_order():
    actual = [{"k": "a", "v": 1.0000001}, {"k": "b", "v": 2.0}]
    assert_values_equal(actual, [{"k": "b", "v": pytest.approx(2)},
                                 {"k": "a", "v": pytest.approx(1)}], ignore_order=True)
    with pytest.raises(OutputMismatchError):
        assert_values_equal(actual, [{"k": "b", "v": pytest.approx(2)},
                                     {"k": "b", "v": pytest.approx(2)}], ignore_order=True)


def test_the_module_does_not_import_pytest():
    code = ("import sys, pyspark_streamtest.core.equality as e\n"
            "e.assert_values_equal([{'x': 0.1 + 0.2}], [{'x': 0.3}], rtol=1e-9)\n"
            "assert 'pytest' not in sys.modules and '_pytest' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- ignoring order ---------------------------------------------------------------------------
def test_ignore_order_finds_a_pairing_first_fit_would_miss():
    # 0.0 first takes 0.0; only then can 1.0 (within 1 of 0.0 only) and -1.0 pair up.
    assert_values_equal([0.0, -1.0], [0.0, 1.0], atol=1.0, ignore_order=True)
    assert_values_equal([{"x": -1.0}, {"x": 0.0}], [{"x": 0.0}, {"x": 1.0}], atol=1.0,
                        ignore_order=True)
    mismatch([0.0, -1.0], [0.0, 1.0], atol=0.5, ignore_order=True)


def test_ignore_order_is_a_multiset_within_tolerance_too():
    lines = mismatch([1.0, 1.0, 2.0], [1.0, 2.0, 2.0], rtol=1e-9, ignore_order=True)
    assert lines[0] == ("values: 3 values expected, 3 read; 1 differ (order ignored); "
                        "compared with rtol=1e-09, atol=0.0")
    assert [line.split() for line in lines[2:]] == [
        ["0", "1.0", "1.0"], ["1", "2.0", "2.0"],
        ["*", "2", "2.0", "1.0", "off", "by", "1,", "allowed", "2e-09"]]


def test_ignore_order_shows_pairs_then_what_is_left_and_the_batches():
    lines = mismatch([{"u": "a"}, {"u": "x"}, {"u": "c"}], [{"u": "c"}, {"u": "a"}],
                     ignore_order=True, batch_ids=[0, 1, 2])
    assert lines == [
        "values: 2 values expected, 3 read; 1 differ (order ignored)",
        "      #  expected   actual",
        '      0  {"u":"a"}  (batch 0) {"u":"a"}',
        '      1  {"u":"c"}  (batch 2) {"u":"c"}',
        '  *   2  -          (batch 1) {"u":"x"}',
    ]


# --- ignoring columns ---------------------------------------------------------------------
def test_ignored_columns_leave_both_sides():
    actual = [{"id": 7, "user": "a", "at": "2024-01-01T00:00:01Z"}]
    assert_values_equal(actual, [{"id": 1, "user": "a"}], ignore_columns=["id", "at"])
    assert_values_equal(actual, [{"user": "a"}], ignore_columns=("id", "at"))
    assert_values_equal(actual, [{"user": "a", "at": 0}], ignore_columns={"id", "at"})
    lines = mismatch(actual, [{"id": 1, "user": "b"}], ignore_columns=["id", "at"])
    assert lines[0].endswith("1 differ; ignoring columns: at, id")
    assert lines[2] == '  *   0  {"user":"b"}  {"user":"a"}    user: "b" != "a"'


def test_a_column_no_value_has_is_an_error_naming_the_fields():
    with pytest.raises(InvalidArgumentError, match=(
            r"ignore_columns names 'idd', a field of no value compared \(expected or "
            r"actual\); their fields are id, user: check the spelling")):
        assert_values_equal([{"id": 1}], [{"user": "a"}], ignore_columns=["id", "idd"])
    with pytest.raises(InvalidArgumentError, match="no value compared has fields"):
        assert_values_equal([1], [1], ignore_columns=["id"])
    assert_values_equal([], [], ignore_columns=["id"])  # nothing to check it against


@pytest.mark.parametrize(("value", "error", "words"), [
    ("id", InvalidArgumentTypeError, "a collection of field names such as ['id'], got str"),
    (3, InvalidArgumentTypeError, "a collection of field names such as ['id'], got int"),
    ({"id": 1}, InvalidArgumentTypeError, "got dict"),
    ([1], InvalidArgumentTypeError, "ignore_columns holds 1 (int); field names are strings"),
    ([""], InvalidArgumentError, "ignore_columns holds an empty name"),
])
def test_ignore_columns_must_be_field_names(value, error, words):
    with pytest.raises(error) as caught:
        assert_values_equal([{"id": 1}], [{"id": 1}], ignore_columns=value)
    assert words in str(caught.value)


@pytest.mark.parametrize(("options", "error", "words"), [
    ({"rtol": -1e-9}, InvalidArgumentError, "rtol must be a finite number >= 0, got -1e-09; "
                                            "pass e.g. rtol=1e-9"),
    ({"atol": float("nan")}, InvalidArgumentError, "atol must be a finite number >= 0"),
    ({"atol": float("inf")}, InvalidArgumentError, "atol must be a finite number >= 0"),
    ({"rtol": "1e-9"}, InvalidArgumentTypeError, "rtol must be a number >= 0 such as "
                                                 "rtol=1e-9, got str '1e-9'"),
    ({"rtol": True}, InvalidArgumentTypeError, "got bool True"),
    ({"ignore_order": "yes"}, InvalidArgumentTypeError, "ignore_order must be True or False"),
])
def test_options_it_cannot_use_are_typed_errors(options, error, words):
    with pytest.raises(error) as caught:
        assert_values_equal([1.0], [1.0], **options)
    assert words in str(caught.value)


def test_wide_values_mark_only_the_fields_beyond_the_tolerance():
    url = "/" + "x" * 120
    lines = mismatch([{"url": url, "a": 0.1 + 0.2, "b": 1.5}, {"url": url, "a": 1.0, "b": 2.0}],
                     [{"url": url, "a": 0.3, "b": 1.0}, {"url": url, "a": 1.0, "b": 2.0}],
                     rtol=1e-9)
    assert lines[0].endswith("(wide values: a field per line); compared with rtol=1e-09, "
                             "atol=0.0")
    assert lines[1] == "  *   0    b: 1.0 != 1.5 (off by 0.5, allowed 1.5e-09)"
    assert lines[3].split() == ["a", "0.3", "0.30000000000000004"]  # close: no *
    assert lines[4].split() == ["*", "b", "1.0", "1.5"]
    assert lines[-1].startswith('      1  {"a":1.0,"b":2.0,"url":"/xxx')


# --- TestOutputTopic.assert_values ------------------------------------------------------------
def topic_with(*values) -> tuple[TestOutputTopic, History]:
    history = History(["out"])
    history.absorb([])
    for index, value in enumerate(values):
        history.queue("out").append(TestRecord(value=value, topic="out", batch_id=index))
    link = OutputLink(check_open=lambda: None, history=history, to_frame=None)
    return TestOutputTopic._create(link, "out", kafka=False), history


def test_assert_values_compares_in_order_by_default_with_the_options():
    topic, _ = topic_with({"id": 1, "avg": 0.1 + 0.2}, {"id": 2, "avg": 1.0})
    topic.assert_values([{"avg": 0.3}, {"avg": 1.0}], rtol=1e-9, ignore_columns=["id"])
    assert topic.is_empty()
    topic, _ = topic_with({"n": 1}, {"n": 2})
    with pytest.raises(OutputMismatchError) as caught:
        topic.assert_values([{"n": 2}, {"n": 1}])  # FIFO: the order written
    assert str(caught.value).startswith("output 'out': 2 values expected, 2 read; 2 differ\n")
    assert topic.is_empty()  # a mismatch has read them
    topic, _ = topic_with({"n": 1}, {"n": 2})
    topic.assert_values([{"n": 2}, {"n": 1}], ignore_order=True)


def test_assert_values_names_the_batches_and_the_tolerances():
    topic, _ = topic_with({"id": 1, "avg": 0.5}, {"id": 2, "avg": 0.25})
    with pytest.raises(OutputMismatchError) as caught:
        topic.assert_values([{"avg": 0.25}, {"avg": 0.75}], atol=0.1, ignore_order=True,
                            ignore_columns=["id"])
    assert str(caught.value).splitlines() == [
        "output 'out': 2 values expected, 2 read; 1 differ (order ignored); compared with "
        "rtol=0.0, atol=0.1; ignoring columns: id",
        "      #  expected      actual",
        '      0  {"avg":0.25}  (batch 1) {"avg":0.25}',
        '  *   1  {"avg":0.75}  (batch 0) {"avg":0.5}    avg: 0.75 != 0.5 (off by 0.25, '
        "allowed 0.1)",
    ]


@pytest.mark.parametrize("options", [{"rtol": -1.0}, {"ignore_columns": "id"},
                                     {"ignore_columns": ["idd"]}])
def test_assert_values_reads_nothing_when_an_option_is_refused(options):
    topic, _ = topic_with({"id": 1}, {"id": 2})
    with pytest.raises((InvalidArgumentError, InvalidArgumentTypeError)):
        topic.assert_values([{"id": 1}, {"id": 2}], **options)
    assert topic.queue_size == 2
    topic.assert_values([{"id": 1}, {"id": 2}])


def test_decimals_compare_by_value_as_spark_writes_them_differently():
    from decimal import Decimal

    # Spark gives Decimal("1.00E-10") back for a piped Decimal("1E-10"), "0E-10" for 0
    assert_values_equal([{"m": Decimal("1.00E-10")}, {"m": Decimal("0E-10")}],
                        [{"m": Decimal("0")}, {"m": Decimal("1E-10")}], ignore_order=True)
    assert_values_equal([Decimal("1.50")], [Decimal("1.5")])
    with pytest.raises(OutputMismatchError, match=r'"1.5"\s+"1.51"'):
        assert_values_equal([Decimal("1.51")], [Decimal("1.5")])
    with pytest.raises(OutputMismatchError):  # a decimal is not the float of its value
        assert_values_equal([Decimal("1.5")], [1.5])
