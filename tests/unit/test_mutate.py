"""The mutation tester's pure parts, without Spark: duration strings and their mutants,
the spots of SQL texts, mutants' identities, results merged and classified, and the
reports (terminal, JSON, JUnit)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException

from pyspark_streamtest.errors import (
    StreamingQueryFailedError,
    TopologyError,
    UnsupportedAppCallError,
)
from pyspark_streamtest.mutate import Mutant, MutantResult, Score, Site
from pyspark_streamtest.mutate._duration_texts import Duration, changed, from_millis, parse_duration
from pyspark_streamtest.mutate._sites import is_users, users_frame
from pyspark_streamtest.mutate._sql import Spot, replaced, spots
from pyspark_streamtest.mutate.report import RunFacts, hint, terminal_lines, to_json, to_junit
from pyspark_streamtest.mutate.results import classify, merge

US = 1
MS = 1_000
S = 1_000_000
MIN = 60 * S
H = 60 * MIN
DAY = 24 * H


# --- duration strings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "micros", "unit"),
    [
        ("10 seconds", 10 * S, "second"),
        ("1 second", S, "second"),
        ("1 seconds", S, "second"),
        ("10 SECONDS", 10 * S, "second"),
        ("10seconds", 10 * S, "second"),
        ("  5 minutes  ", 5 * MIN, "minute"),
        ("interval 10 seconds", 10 * S, "second"),
        ("INTERVAL 1 minute", MIN, "minute"),
        ("1 hour 30 minutes", 90 * MIN, "minute"),
        ("interval 1 day 2 hours 3 seconds", DAY + 2 * H + 3 * S, "second"),
        ("30 minutes 1 hour", 90 * MIN, "minute"),
        ("500 milliseconds", 500 * MS, "millisecond"),
        ("1 millisecond", MS, "millisecond"),
        ("250 microseconds", 250 * US, "microsecond"),
        ("2 weeks", 14 * DAY, "week"),
        ("0 seconds", 0, "second"),
    ],
    ids=["plural", "singular", "one-in-plural", "upper-case", "no-space", "padded",
         "interval-prefix", "INTERVAL-singular", "hour-and-minutes", "three-units",
         "units-in-any-order", "milliseconds", "one-millisecond", "microseconds", "weeks",
         "zero"],
)
def test_a_duration_string_is_read_exactly_in_its_smallest_unit(text, micros, unit):
    assert parse_duration(text) == Duration(micros, unit)


@pytest.mark.parametrize(
    "value",
    ["1 month", "2 years", "1 year 2 days", "1.5 seconds", "-10 seconds", "", "seconds",
     "10", "10 sec", "10 s", "interval", "interval '10' second", "10 seconds ago",
     "intervals 10 seconds", 10, 10.0, None, b"10 seconds", ["10 seconds"]],
    ids=["months", "years", "years-and-days", "fraction", "negative", "empty", "no-amount",
         "no-unit", "abbreviated-unit", "letter-unit", "interval-alone", "quoted-amount",
         "trailing-words", "misspelt-prefix", "int", "float", "None", "bytes", "list"],
)
def test_what_is_not_a_fixed_duration_string_makes_no_duration(value):
    assert parse_duration(value) is None


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (Duration(10 * S, "second"), "10 seconds"),
        (Duration(S, "second"), "1 second"),
        (Duration(0, "second"), "0 seconds"),
        (Duration(500 * MS, "second"), "500 milliseconds"),
        (Duration(1500 * US, "millisecond"), "1500 microseconds"),
        (Duration(90 * MIN, "hour"), "90 minutes"),
        (Duration(2 * H, "hour"), "2 hours"),
        (Duration(7 * DAY, "day"), "7 days"),
        (Duration(14 * DAY, "week"), "2 weeks"),
        (Duration(US, "microsecond"), "1 microsecond"),
    ],
    ids=["seconds", "one-second", "zero", "steps-down-to-ms", "steps-down-to-us",
         "not-folded-into-hours", "hours", "days-stay-days", "weeks", "one-microsecond"],
)
def test_render_writes_the_unit_or_the_largest_smaller_one_that_divides(duration, text):
    assert duration.render() == text


@pytest.mark.parametrize(
    "text",
    ["10 seconds", "1 second", "1 hour", "30 minutes", "500 milliseconds", "7 days",
     "1 week", "3 microseconds"],
)
def test_a_single_unit_string_renders_back_as_written(text):
    duration = parse_duration(text)
    assert duration is not None and duration.render() == text


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("10 minutes", MIN),
        ("2 hours", H),
        ("1 hour", MIN),
        ("1 minute", S),
        ("1 second", MS),
        ("1 millisecond", US),
        ("1 microsecond", US),
        ("1 day", H),
        ("1 week", DAY),
        ("1 hour 30 minutes", MIN),
        ("1 hour 0 minutes", MIN),
        ("0 seconds", S),
    ],
    ids=["minutes", "hours", "one-hour", "one-minute", "one-second", "one-millisecond",
         "one-microsecond-has-no-smaller", "one-day", "one-week", "multi-unit",
         "sixty-minutes-written-as-two-units", "zero"],
)
def test_one_unit_is_the_smallest_written_or_the_next_smaller_for_a_single_one(text, step):
    duration = parse_duration(text)
    assert duration is not None and duration.step() == step


def _changed(text, **flags):
    duration = parse_duration(text)
    assert duration is not None
    return [(name, new.render()) for name, new in changed(duration, **flags)]


@pytest.mark.parametrize(
    ("text", "flags", "expected"),
    [
        ("10 seconds", {},
         [("double", "20 seconds"), ("one unit less", "9 seconds"),
          ("one unit more", "11 seconds")]),
        ("10 seconds", {"zero": True, "half": True, "less": False},
         [("zero", "0 seconds"), ("half", "5 seconds"), ("double", "20 seconds"),
          ("one unit more", "11 seconds")]),
        ("1 hour", {"double": False},
         [("one unit less", "59 minutes"), ("one unit more", "61 minutes")]),
        ("1 second", {"half": True, "double": False, "less": False, "more": False},
         [("half", "500 milliseconds")]),
        ("2 seconds", {"half": True},
         [("half", "1 second"), ("double", "4 seconds"), ("one unit more", "3 seconds")]),
        ("1 hour 30 minutes", {},
         [("double", "180 minutes"), ("one unit less", "89 minutes"),
          ("one unit more", "91 minutes")]),
        ("1 microsecond", {"half": True}, [("double", "2 microseconds")]),
        ("1 microsecond", {"zero": True, "half": True, "double": False},
         [("zero", "0 microseconds"), ("one unit more", "2 microseconds")]),
        ("0 seconds", {"zero": True, "half": True},
         [("one unit more", "1 second")]),
    ],
    ids=["window-defaults", "watermark-set", "one-hour-by-minutes", "half-a-second",
         "half-and-one-less-agree-once", "multi-unit", "double-and-more-agree-once",
         "zero-asked-and-half-rounds-to-it", "zero-original"],
)
def test_changed_makes_each_new_duration_once(text, flags, expected):
    assert _changed(text, **flags) == expected


def test_changed_never_gives_the_original_a_repeat_a_negative_or_an_unasked_zero():
    flags = ("zero", "half", "double", "less", "more")
    for text in ("0 seconds", "1 microsecond", "2 microseconds", "1 second", "2 seconds",
                 "10 seconds", "1 hour", "1 hour 30 minutes", "1 week"):
        duration = parse_duration(text)
        assert duration is not None
        for chosen in itertools.product((False, True), repeat=len(flags)):
            made = changed(duration, **dict(zip(flags, chosen, strict=True)))
            micros = [new.micros for _, new in made]
            assert len(micros) == len(set(micros)), (text, chosen)
            assert duration.micros not in micros, (text, chosen)
            assert all(m >= 0 for m in micros), (text, chosen)
            if not chosen[0]:
                assert 0 not in micros, (text, chosen)


@pytest.mark.parametrize(
    ("ms", "unit", "text"),
    [
        (600_000, "minute", "10 minutes"),
        (1_000, "second", "1 second"),
        (1_500, "millisecond", "1500 milliseconds"),
        (7_200_000, "hour", "2 hours"),
        (2 * 86_400_000, "day", "2 days"),
        (14 * 86_400_000, "day", "14 days"),
        (1, "millisecond", "1 millisecond"),
        (0, "millisecond", "0 milliseconds"),
    ],
    ids=["minutes", "second", "milliseconds", "hours", "days", "no-weeks", "one-ms", "zero"],
)
def test_from_millis_takes_the_largest_unit_that_divides(ms, unit, text):
    duration = from_millis(ms)
    assert duration == Duration(ms * 1_000, unit)
    assert duration.render() == text


# --- spots of SQL texts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a < b", [("compare", "<")]),
        ("a<b", [("compare", "<")]),
        ("a <= b and c >= d and e > f", [("compare", "<="), ("compare", ">="), ("compare", ">")]),
        ("a <=> b", []),
        ("a <> b", []),
        ("a != b and a = b and a == b", []),
        ("exists(xs, x -> x > 1)", [("compare", ">")]),
        ("f(a => 1)", []),
        ("a !> b or a !< b", []),
        ("a >> 2 > 1", [("compare", ">")]),
        ("a >>> 2 < b and a << 1 <= c", [("compare", "<"), ("compare", "<=")]),
        ("s = '<' and t = \"a > b\"", []),
        ("`weird<col>` > 1", [("compare", ">")]),
        ("s = 'it''s < x' and ts < x", [("compare", "<")]),
        ("s = 'a\\'b < c' and ts < x", [("compare", "<")]),
        ("s = 'a\\\\' and ts < x", [("compare", "<")]),
        ("s = '<  unterminated", []),
        ("< 5", [("compare", "<")]),
        ("ts <= o + interval 1 hour", [("compare", "<="), ("interval", "interval 1 hour")]),
        ("ts >= o - INTERVAL '30' MINUTE", [("compare", ">="),
                                             ("interval", "INTERVAL '30' MINUTE")]),
        ("ts < o + INTERVAL 10 SECONDS", [("compare", "<"), ("interval", "INTERVAL 10 SECONDS")]),
        ("ts < o + interval 1 hour 30 minutes and k = j",
         [("compare", "<"), ("interval", "interval 1 hour 30 minutes")]),
        ("ts < o + interval 2 days)", [("compare", "<"), ("interval", "interval 2 days")]),
        ("interval_ts > 5", [("compare", ">")]),
        ("myinterval 5 seconds", []),
        ("x_interval 5 seconds", []),
        ("s = 'interval 1 hour'", []),
        ("ts < o + interval 1 month", [("compare", "<")]),
        ("ts < o + interval '1:30' hour to minute", [("compare", "<")]),
        ("ts < o + interval 1 hourly", [("compare", "<")]),
    ],
    ids=["less", "no-spaces", "three", "null-safe-equal", "not-equal", "equalities",
         "lambda-arrow", "named-argument", "bang-comparisons-left-alone", "shift-right",
         "shifts-of-spark-4", "in-quotes", "in-backticks", "doubled-quote", "escaped-quote",
         "escaped-backslash-ends-string", "unterminated-quote", "at-the-start",
         "interval", "ansi-interval", "upper-case-interval", "multi-unit-interval",
         "interval-before-paren", "identifier-starting-interval",
         "identifier-ending-interval", "identifier-with-underscore", "interval-in-quotes",
         "months-not-read", "day-time-string-not-read", "unit-not-a-word"],
)
def test_spots_are_the_comparisons_and_intervals_outside_quotes(text, found):
    result = spots(text)
    assert [(spot.kind, spot.text) for spot in result] == found
    assert all(text[spot.start:spot.end] == spot.text for spot in result)


@pytest.mark.parametrize(
    ("spot", "mutants"),
    [
        (Spot("compare", 0, 1, "<"), [("< → <=", "<=")]),
        (Spot("compare", 0, 2, "<="), [("<= → <", "<")]),
        (Spot("compare", 0, 1, ">"), [("> → >=", ">=")]),
        (Spot("compare", 0, 2, ">="), [(">= → >", ">")]),
        (Spot("interval", 0, 15, "interval 1 hour"),
         [("one unit less", "INTERVAL 59 minutes"), ("one unit more", "INTERVAL 61 minutes")]),
        (Spot("interval", 0, 20, "INTERVAL '30' MINUTE"),
         [("one unit less", "INTERVAL 29 minutes"), ("one unit more", "INTERVAL 31 minutes")]),
        (Spot("interval", 0, 26, "interval 1 hour 30 minutes"),
         [("one unit less", "INTERVAL 89 minutes"), ("one unit more", "INTERVAL 91 minutes")]),
        (Spot("interval", 0, 19, "interval 10 seconds"),
         [("one unit less", "INTERVAL 9 seconds"), ("one unit more", "INTERVAL 11 seconds")]),
        (Spot("interval", 0, 18, "interval 0 seconds"), [("one unit more", "INTERVAL 1 second")]),
    ],
    ids=["less", "less-or-equal", "greater", "greater-or-equal", "one-hour", "ansi-minutes",
         "multi-unit", "seconds", "zero-only-grows"],
)
def test_a_spot_s_mutants_flip_the_comparison_or_move_the_interval_one_unit(spot, mutants):
    assert spot.mutants() == mutants


def test_replaced_changes_only_the_spot():
    text = "ts <= o + interval 1 hour and k < 3"
    compare, interval, last = spots(text)
    assert replaced(text, interval, interval.mutants()[0][1]) == (
        "ts <= o + INTERVAL 59 minutes and k < 3")
    assert replaced(text, compare, "<") == "ts < o + interval 1 hour and k < 3"
    assert replaced(text, last, "<=") == "ts <= o + interval 1 hour and k <= 3"


# --- mutants ----------------------------------------------------------------------------------

SITE = Site("windows_job:windowed_counts", "windows_job.py", 6, "withWatermark", 1, "delay")
DOUBLE = Mutant(SITE, "double", "watermark", 'withWatermark("ts", "10 seconds")',
                '"20 seconds"', 'counts = (events.withWatermark("ts", "10 seconds")')


def test_a_mutant_s_id_is_the_same_in_every_process():
    # measured: the id this mutant had in a --streamtest-mutate run of the fixture suite
    assert DOUBLE.id == "23c7cf0bffc6"


def test_the_id_is_the_site_and_operator_whatever_the_kind_code_or_texts():
    same = Mutant(SITE, "double", "window", "other", "texts", "")
    assert same.id == DOUBLE.id
    others = [
        Mutant(SITE, "half", "watermark", DOUBLE.original, DOUBLE.replacement),
        Mutant(Site(SITE.topology, SITE.file, 7, SITE.api, 1, SITE.part), "double", "", "", ""),
        Mutant(Site(SITE.topology, SITE.file, 6, SITE.api, 2, SITE.part), "double", "", "", ""),
        Mutant(Site(SITE.topology, SITE.file, 6, SITE.api, 1, "other"), "double", "", "", ""),
        Mutant(Site("m:other", SITE.file, 6, SITE.api, 1, SITE.part), "double", "", "", ""),
    ]
    assert len({DOUBLE.id, *(m.id for m in others)}) == 1 + len(others)
    assert all(len(m.id) == 12 and int(m.id, 16) >= 0 for m in others)


def test_a_mutant_reads_as_the_call_and_its_new_value():
    assert DOUBLE.description == 'withWatermark("ts", "10 seconds") → "20 seconds"'
    assert SITE.where == "windows_job.py:6"


def test_a_mutant_round_trips_through_json():
    data = json.loads(json.dumps(DOUBLE.to_json()))
    assert data["id"] == DOUBLE.id
    assert Mutant.from_json(data) == DOUBLE
    del data["code"]
    assert Mutant.from_json(data) == Mutant(SITE, "double", "watermark", DOUBLE.original,
                                            DOUBLE.replacement)


@pytest.mark.parametrize(
    ("path", "users"),
    [
        ("/home/me/project/jobs/windows_job.py", True),
        ("/usr/local/lib/python3.11/site-packages/my_jobs/windows_job.py", True),
        ("/usr/local/lib/python3.11/dist-packages/my_jobs/windows_job.py", True),
        ("/usr/local/lib/python3.11/contextlib.py", False),
        ("/usr/local/lib/python3.11/importlib/__init__.py", False),
        ("/usr/local/lib/python3.11/site-packages.py", False),
    ],
    ids=["project", "installed-under-the-stdlib", "debian-installed", "stdlib-module",
         "stdlib-package", "a-file-named-site-packages"],
)
def test_the_user_s_code_is_what_is_not_ours_pyspark_s_or_the_standard_library_s(path, users):
    assert is_users(path, stdlib="/usr/local/lib/python3.11/") is users


def test_the_test_runner_s_files_are_not_the_user_s():
    """A canned topology of this package is built from pytest's frames: no frame of it is
    the user's, so it offers no mutant (an installed job elsewhere in site-packages is
    still the user's)."""
    import _pytest.runner
    import pluggy

    assert not is_users(os.path.abspath(_pytest.runner.__file__))
    assert not is_users(os.path.abspath(pytest.__file__))
    assert not is_users(os.path.abspath(pluggy.__file__))


def test_ours_and_pyspark_s_files_are_not_the_user_s_and_a_test_file_is():
    import pyspark.sql.functions

    import pyspark_streamtest.mutate.mutator as intercept

    assert not is_users(os.path.abspath(intercept.__file__))
    assert not is_users(os.path.abspath(pyspark.sql.functions.__file__))
    assert not is_users(os.path.abspath(contextlib.__file__))
    here = users_frame(os.path.dirname(__file__)), sys._getframe().f_lineno
    assert here == (("test_mutate.py", here[1], "here = users_frame(os.path.dirname(__file__)), "
                     "sys._getframe().f_lineno"), here[1])


# --- results ------------------------------------------------------------------------------------


def _result(status, tests=(), *, mutant=DOUBLE, by=None, reason="", seconds=0.0):
    return MutantResult(mutant, status, list(tests), by, reason, seconds)


@pytest.mark.parametrize(
    ("first", "second", "status"),
    [
        ("killed", "survived", "killed"),
        ("survived", "killed", "killed"),
        ("invalid", "killed", "killed"),
        ("killed", "invalid", "killed"),
        ("survived", "invalid", "invalid"),
        ("invalid", "survived", "invalid"),
        ("unreached", "survived", "survived"),
        ("survived", "unreached", "survived"),
        ("unreached", "invalid", "invalid"),
        ("unreached", "unreached", "unreached"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_merged_keeps_the_stronger_fate(first, second, status):
    assert _result(first).merged(_result(second)).status == status


def test_merged_unites_the_tests_in_order_and_adds_the_seconds():
    survived = _result("survived", ["t::a", "t::b"], seconds=1.5)
    killed = _result("killed", ["t::b", "t::c"], by="t::c", reason="AssertionError: x",
                     seconds=2.0)
    both = survived.merged(killed)
    assert both.tests == ["t::b", "t::c", "t::a"]  # the winner's first
    assert (both.by, both.reason, both.seconds) == ("t::c", "AssertionError: x", 3.5)
    again = _result("survived", ["t::a"], seconds=1.0).merged(
        _result("survived", ["t::c", "t::a"], seconds=1.0))
    assert (again.tests, again.seconds) == (["t::a", "t::c"], 2.0)


def test_merge_gives_one_result_per_mutant_in_site_order():
    later = Mutant(Site("m:t", "job.py", 9, "window", 1, "windowDuration"), "double",
                   "window", "window(...)", '"2 seconds"')
    earlier = Mutant(Site("m:t", "job.py", 3, "withWatermark", 1, "delay"), "zero",
                     "watermark", "withWatermark(...)", '"0 seconds"')
    merged = merge([
        _result("survived", ["a"], mutant=later),
        _result("survived", ["b"], mutant=earlier),
        _result("killed", ["c"], mutant=later, by="c"),
    ])
    assert [(r.mutant, r.status, r.tests) for r in merged] == [
        (earlier, "survived", ["b"]), (later, "killed", ["c", "a"])]


def test_a_result_round_trips_through_json():
    result = _result("killed", ["t::a"], by="t::a", reason="AssertionError: no", seconds=1.23456)
    back = MutantResult.from_json(json.loads(json.dumps(result.to_json())))
    assert back.mutant == result.mutant and back.tests == ["t::a"]
    assert (back.status, back.by, back.reason, back.seconds) == (
        "killed", "t::a", "AssertionError: no", 1.235)


@pytest.mark.parametrize(
    ("statuses", "counts", "percent"),
    [
        ([], (0, 0, 0, 0, 0), None),
        (["invalid", "unreached"], (2, 0, 0, 1, 1), None),
        (["killed", "killed", "killed", "survived"], (4, 3, 1, 0, 0), 75.0),
        (["killed", "invalid", "unreached"], (3, 1, 0, 1, 1), 100.0),
        (["survived", "invalid"], (2, 0, 1, 1, 0), 0.0),
    ],
    ids=["nothing", "nothing-counted", "three-of-four", "invalid-not-counted", "none-killed"],
)
def test_the_score_is_killed_over_killed_and_survived(statuses, counts, percent):
    score = Score.of(_result(status) for status in statuses)
    assert (score.made, score.killed, score.survived, score.invalid, score.unreached) == counts
    assert score.percent == percent


# --- classify -------------------------------------------------------------------------------------


def _raised_from(error, cause):
    try:
        try:
            raise cause
        except BaseException as inner:
            raise error from inner
    except BaseException as outer:
        return outer


def _did_not_raise():
    try:
        with pytest.raises(ValueError):
            pass
    except BaseException as failed:
        return failed
    raise AssertionError("pytest.raises passed")


MULTIPLE = ("org.apache.spark.sql.AnalysisException: [MULTIPLE_EVENT_TIME_COLUMNS] More than "
            "one event time columns are available.\n\tat org.apache.spark.sql...")
OVERFLOW = ("org.apache.spark.SparkArithmeticException: [ARITHMETIC_OVERFLOW] long overflow. "
            "SQLSTATE: 22003\n\tat org.apache.spark.sql.errors.QueryExecutionErrors...")


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (None, "killed", "the test failed"),
        (AssertionError("assert 5 == 4\n +  where 5 = sum(...)"), "killed",
         "AssertionError: assert 5 == 4"),
        (_did_not_raise(), "killed", "Failed: DID NOT RAISE"),
        (TopologyError("output 'x' is declared twice"), "invalid",
         "TopologyError: output 'x' is declared twice"),
        (UnsupportedAppCallError("a foreach sink"), "invalid",
         "UnsupportedAppCallError: a foreach sink"),
        (AnalysisException(message="[MULTIPLE_EVENT_TIME_COLUMNS] More than one"), "invalid",
         "AnalysisException: [MULTIPLE_EVENT_TIME_COLUMNS] More than one"),
        (IllegalArgumentException(message="requirement failed: gap"), "invalid",
         "IllegalArgumentException: requirement failed: gap"),
        (StreamingQueryFailedError("counts", 0, MULTIPLE), "invalid",
         "StreamingQueryFailedError: " + MULTIPLE.splitlines()[0]),
        (StreamingQueryFailedError("counts", 2, "pyspark.errors.AnalysisException: no"),
         "invalid", "StreamingQueryFailedError: pyspark.errors.AnalysisException: no"),
        (StreamingQueryFailedError("counts", 1, OVERFLOW), "killed",
         "StreamingQueryFailedError: the query of output 'counts' failed in batch 1"),
        (_raised_from(RuntimeError("wrapped"), AnalysisException(message="[UNSUPPORTED_X] no")),
         "invalid", "AnalysisException: [UNSUPPORTED_X] no"),
        (_raised_from(AssertionError("outer"), _raised_from(
            RuntimeError("middle"), StreamingQueryFailedError("out", 0, MULTIPLE))),
         "invalid", "StreamingQueryFailedError: " + MULTIPLE.splitlines()[0]),
        (_raised_from(AssertionError("outer"), KeyError("k")), "killed",
         "AssertionError: outer"),
    ],
    ids=["no-error", "assertion", "did-not-raise", "topology-error", "unsupported-app-call",
         "analysis-exception", "illegal-argument", "failed-batch-spark-refused",
         "failed-batch-analysis-exception", "failed-batch-arithmetic", "cause-followed",
         "chain-of-causes-followed", "cause-not-a-refusal"],
)
def test_classify_tells_a_refusal_from_a_kill(error, status, reason):
    found, line = classify(error)
    assert found == status
    assert line.startswith(reason)


def test_classify_ends_on_a_cycle_of_causes():
    first, second = AssertionError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert classify(first) == ("killed", "AssertionError: a")


# --- reports ---------------------------------------------------------------------------------------

JOB = "windows_job:windowed_counts"
WINDOW = Mutant(Site(JOB, "windows_job.py", 7, "window", 1, "windowDuration"), "one unit less",
                "window", 'window("ts", "10 seconds")', '"9 seconds"',
                '.groupBy(F.window("ts", "10 seconds"), "user").count())')
MODE = Mutant(Site(JOB, "windows_job.py", 8, "outputMode", 1, "mode"), "append → update",
              "output mode", 'outputMode("append")', '"update"',
              't.output("counts", counts, output_mode="append")')
SESSION = Mutant(Site("sessions_job:sessions", "sessions_job.py", 6, "outputMode", 1, "mode"),
                 "append → update", "output mode", 'outputMode("append")', '"update"', "")
GAP = Mutant(Site("sessions_job:sessions", "sessions_job.py", 7, "session_window", 1,
                  "gapDuration"), "double", "session gap", 'session_window("ts", "5 seconds")',
             '"10 seconds"', "")
RESULTS = [
    _result("survived", ["test_weak.py::test_every_click_is_counted",
                         "test_weak.py::test_totals"], seconds=2.0),
    _result("killed", ["test_weak.py::test_every_click_is_counted"], mutant=MODE,
            by="test_weak.py::test_every_click_is_counted", reason="AssertionError: assert 5 == 4",
            seconds=1.0),
    _result("survived", ["test_weak.py::test_every_click_is_counted"], mutant=WINDOW,
            seconds=2.0),
    _result("invalid", ["test_s.py::test_gap"], mutant=SESSION, by="test_s.py::test_gap",
            reason="AnalysisException: [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION]",
            seconds=0.5),
    _result("unreached", ["test_s.py::test_gap"], mutant=GAP,
            reason="its tests no longer made the call it changes", seconds=0.5),
]
FACTS = RunFacts(found=5, sampled=None, seed=0, test_seconds=6.0, phase_seconds=6.6)


def test_the_terminal_report_names_each_survivor_in_the_user_s_terms():
    lines = terminal_lines(RESULTS, FACTS)
    assert lines == [
        f"{JOB}: 3 mutants, 0 invalid, 1 killed, 2 survived: score 33.3 %",
        '  survived  windows_job.py:6  withWatermark("ts", "10 seconds") → "20 seconds"',
        '            code: counts = (events.withWatermark("ts", "10 seconds")',
        "            tests: test_every_click_is_counted, test_totals",
        "            no test tells a delay of 10 seconds from 20 seconds: none pipes a record",
        "            between 10 seconds and 20 seconds older than the newest of an earlier batch",
        "            (late with the shorter delay, on time with the longer), nor checks when a",
        "            window closes or state goes",
        '  survived  windows_job.py:7  window("ts", "10 seconds") → "9 seconds"',
        '            code: .groupBy(F.window("ts", "10 seconds"), "user").count())',
        "            tests: test_every_click_is_counted",
        "            no test tells window [00:00:00, 00:00:10) from [00:00:00, 00:00:09): none",
        "            pipes a record between 9 seconds and 10 seconds after a window's start, nor",
        "            checks when a window closes",
        "sessions_job:sessions: 2 mutants, 1 invalid, 1 unreached, 0 killed, 0 survived: "
        "no mutant counted",
        "overall: 5 mutants, 1 invalid, 1 unreached, 1 killed, 2 survived: score 33.3 %",
        "cost: the mutants' tests took 6.0 s, the mutation phase 6.6 s: 1.10x",
    ]


def test_verbose_shows_the_invalid_and_unreached_with_their_reasons_never_the_killed():
    lines = terminal_lines(RESULTS, FACTS, verbose=True)
    shown = [line.split()[:2] for line in lines if line.startswith("  ") and
             not line.startswith("   ")]
    assert shown == [["survived", "windows_job.py:6"], ["survived", "windows_job.py:7"],
                     ["invalid", "sessions_job.py:6"], ["unreached", "sessions_job.py:7"]]
    assert "            AnalysisException: [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION]" in lines
    assert "            its tests no longer made the call it changes" in lines
    assert not any("code:" in line for line in lines[lines.index(
        "  invalid   sessions_job.py:6  outputMode(\"append\") → \"update\""):])


@pytest.mark.parametrize(
    ("facts", "overall"),
    [
        (RunFacts(5, None, 0, 0.0, 0.0), "overall: 5 mutants"),
        (RunFacts(5, 5, 3, 0.0, 0.0), "overall: 5 mutants"),
        (RunFacts(8, 5, 3, 0.0, 0.0), "overall (a sample of 5 of 8, seed 3): 5 mutants"),
        (RunFacts(5, None, 0, 0.0, 0.0, min_score=90.0), "overall: 5 mutants"),
    ],
    ids=["all", "a-sample-of-all-is-no-sample", "sampled", "minimum"],
)
def test_the_overall_line_tells_a_sample_and_the_minimum(facts, overall):
    lines = terminal_lines(RESULTS, facts)
    assert lines[-1].startswith(overall)
    assert lines[-1].endswith(" (minimum 90 %)") == (facts.min_score is not None)
    assert not any(line.startswith("cost:") for line in lines)  # no test time measured


def test_the_json_report_carries_every_mutant_its_fate_the_counts_and_hints():
    document = json.loads(to_json(RESULTS, RunFacts(8, 5, 3, 6.0, 6.6, min_score=50.0)))
    assert document["counts"] == {"made": 5, "killed": 1, "survived": 2, "invalid": 1,
                                  "unreached": 1, "errors": 0}
    assert document["score"] == pytest.approx(100 / 3)
    assert (document["found"], document["sampled"], document["seed"]) == (8, 5, 3)
    assert (document["min_score"], document["test_seconds"], document["phase_seconds"]) == (
        50.0, 6.0, 6.6)
    by_id = {m["id"]: m for m in document["mutants"]}
    assert len(by_id) == 5
    assert by_id[DOUBLE.id]["hint"] == hint(RESULTS[0])
    assert by_id[DOUBLE.id]["tests"] == RESULTS[0].tests
    assert by_id[DOUBLE.id]["site"]["line"] == 6
    assert by_id[MODE.id]["hint"] is None and by_id[MODE.id]["status"] == "killed"
    assert by_id[MODE.id]["by"] == "test_weak.py::test_every_click_is_counted"
    assert [MutantResult.from_json(m).mutant for m in document["mutants"]] == [
        r.mutant for r in RESULTS]


def test_the_json_report_of_nothing_counted_has_no_score():
    document = json.loads(to_json(RESULTS[3:], RunFacts(2, None, 0, 0.0, 0.0)))
    assert document["score"] is None and document["counts"]["made"] == 2


def test_the_junit_report_has_a_case_per_mutant_a_survivor_failing_the_rest_skipped():
    root = ET.fromstring(to_junit(RESULTS, FACTS))
    (suite,) = root
    assert (suite.tag, suite.get("tests"), suite.get("failures"), suite.get("skipped"),
            suite.get("errors"), suite.get("time")) == (
        "testsuite", "5", "2", "2", "0", "6.000")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties == {"score": "33.3", "found": "5", "run": "5", "seed": "0",
                          "min_score": "none"}
    cases = {case.get("name"): case for case in suite if case.tag == "testcase"}
    assert len(cases) == 5
    survivor = cases['windows_job.py:6 withWatermark("ts", "10 seconds") → "20 seconds"']
    assert survivor.get("classname") == JOB
    (failure,) = survivor
    assert failure.tag == "failure"
    assert failure.get("message") == f"survived: {hint(RESULTS[0])}"
    assert failure.text is not None and "test_weak.py::test_totals" in failure.text
    killed = cases['windows_job.py:8 outputMode("append") → "update"']
    assert [child.tag for child in killed] == ["system-out"]
    assert killed[0].text == ("killed by test_weak.py::test_every_click_is_counted: "
                              "AssertionError: assert 5 == 4")
    for name, status in (('sessions_job.py:6 outputMode("append") → "update"', "invalid"),
                         ('sessions_job.py:7 session_window("ts", "5 seconds") → '
                          '"10 seconds"', "unreached")):
        (skipped,) = cases[name]
        assert skipped.tag == "skipped" and skipped.get("message", "").startswith(status)


def test_the_junit_report_s_properties_tell_a_sample_its_seed_and_the_minimum():
    facts = RunFacts(122, 8, 7, 6.0, 6.6, 60.0)
    (suite,) = ET.fromstring(to_junit(RESULTS[3:], facts))
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties == {"score": "none", "found": "122", "run": "8", "seed": "7",
                          "min_score": "60"}


@pytest.mark.parametrize(
    "kind",
    ["watermark", "window", "session gap", "join bound", "join strictness", "join type",
     "output mode", "dedup key", "dedup kind", "trigger", "filter"],
)
def test_every_kind_the_mutator_makes_has_its_own_hint(kind):
    mutant = Mutant(SITE, "x", kind, "a", "b")
    assert hint(_result("survived", mutant=mutant)) != "no test tells the two apart"


def _survivor(api: str, part: str, kind: str, original: str, replacement: str) -> str:
    site = Site(JOB, "windows_job.py", 6, api, 1, part)
    return hint(_result("survived", mutant=Mutant(site, "x", kind, original, replacement)))


@pytest.mark.parametrize(
    ("api", "part", "kind", "original", "replacement", "expected"),
    [
        ("withWatermark", "delay", "watermark", 'withWatermark("ts", "1 second")',
         '"500 milliseconds"',
         "no test tells a delay of 1 second from 500 milliseconds: none pipes a record "
         "between 500 milliseconds and 1 second older than the newest of an earlier batch "
         "(late with the shorter delay, on time with the longer), nor checks when a window "
         "closes or state goes"),
        ("withWatermark", "delay", "watermark", 'withWatermark("ts", "2 minutes")',
         '"0 minutes"',
         "no test tells a delay of 2 minutes from 0 minutes: none pipes a record between "
         "0 minutes and 2 minutes older than the newest of an earlier batch (late with the "
         "shorter delay, on time with the longer), nor checks when a window closes or "
         "state goes"),
        ("window", "windowDuration", "window", 'window("ts", "1 hour 30 minutes")',
         '"91 minutes"',
         "no test tells window [00:00, 01:30) from [00:00, 01:31): none pipes a record "
         "between 90 minutes and 91 minutes after a window's start, nor checks when a "
         "window closes"),
        ("window", "windowDuration", "window",
         'window("ts", "1500 milliseconds", "500 milliseconds")', 'duration "1501 milliseconds"',
         "no test tells window [00:00:00.000, 00:00:01.500) from [00:00:00.000, "
         "00:00:01.501): none pipes a record between 1500 milliseconds and 1501 "
         "milliseconds after a window's start, nor checks when a window closes"),
        ("window", "slideDuration", "window", 'window("ts", "10 minutes", "5 minutes")',
         'slide "4 minutes"',
         "no test tells a slide of 5 minutes from 4 minutes: none checks which windows a "
         "record falls in"),
        ("session_window", "gapDuration", "session gap", 'session_window("ts", "5 seconds")',
         '"10 seconds"',
         "no test tells a gap of 5 seconds from 10 seconds: none pipes two records between "
         "5 seconds and 10 seconds apart (one session with the longer gap, two with the "
         "shorter)"),
        ("expr", "interval 1", "join bound",
         'expr("k = j AND ts <= o + interval 10 minutes")',
         '"k = j AND ts <= o + interval 9 minutes"',
         "no test tells an interval of 10 minutes from 9 minutes: none pipes a pair of "
         "records between 9 minutes and 10 minutes apart, at the edge of the range (inside "
         "it with one, outside it with the other)"),
        ("trigger", "processingTime", "trigger", 'trigger(processingTime="1 minute")',
         '"2 minutes"',
         "no test tells a trigger of 1 minute from 2 minutes: none checks which records "
         "share a micro-batch"),
    ],
    ids=["watermark-half", "watermark-zero", "window", "window-with-slide", "slide",
         "session-gap", "join-interval", "trigger"],
)
def test_a_survivor_s_hint_names_its_own_durations(api, part, kind, original, replacement,
                                                    expected):
    assert _survivor(api, part, kind, original, replacement) == expected


@pytest.mark.parametrize(
    ("original", "replacement"),
    [('expr("ts < o + INTERVAL \'30\' MINUTE")', '"ts < o + INTERVAL 29 minutes"'),
     ('expr("a < b + interval 1 hour 30 minutes")', '"a < b + interval 89 minutes"')],
    ids=["quoted-amount", "parts-refolded"],
)
def test_a_join_interval_it_cannot_pair_up_gets_the_general_hint(original, replacement):
    assert _survivor("expr", "interval 1", "join bound", original, replacement) == (
        "no test pipes a pair of records at the edge of the join's time range")


def test_a_sampled_topology_says_how_many_of_its_mutants_ran():
    facts = RunFacts(found=12, sampled=5, seed=0, test_seconds=6.0, phase_seconds=6.6,
                     found_by_topology={JOB: 10})
    lines = terminal_lines(RESULTS, facts)
    assert lines[0] == (f"{JOB} (a sample of 3 of 10): 3 mutants, 0 invalid, 1 killed, "
                        "2 survived: score 33.3 %")
    assert json.loads(to_json(RESULTS, facts))["found_by_topology"] == {JOB: 10}


def test_a_mutant_s_many_tests_are_shown_three_at_most():
    tests = [f"test_t.py::test_{n}" for n in range(5)]
    lines = terminal_lines([_result("survived", tests)], FACTS)
    assert "            tests: test_0, test_1, test_2 and 2 more" in lines


@pytest.mark.parametrize("arguments", [
    ["examples", "-n", "2", "--streamtest-mutate-min-score", "80"],
    ["-k", "window", "tests/test_jobs.py"],
    [],
], ids=["paths-and-options", "options-first", "nothing"])
def test_the_mutate_command_runs_pytest_with_the_option_and_every_argument_as_given(
        monkeypatch, arguments):
    from pyspark_streamtest.gates import cli

    seen = []
    monkeypatch.setattr(pytest, "main", lambda args: seen.append(args) or 3)
    assert cli.main(["mutate", *arguments]) == 3  # pytest's exit status
    assert seen == [["--streamtest-mutate", *arguments]]
