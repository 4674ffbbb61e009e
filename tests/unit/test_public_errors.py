"""The public exceptions show by their name on the package face, and still pickle."""

from __future__ import annotations

import pickle
import traceback

import pytest

import pyspark_streamtest
from pyspark_streamtest import OutputMismatchError, assert_values_equal

PUBLIC_ERRORS = sorted(
    (name, value) for name in pyspark_streamtest.__all__
    if isinstance(value := getattr(pyspark_streamtest, name), type)
    and issubclass(value, BaseException)
)


def test_there_are_public_errors_to_check():
    assert len(PUBLIC_ERRORS) > 30
    assert ("OutputMismatchError", OutputMismatchError) in PUBLIC_ERRORS


@pytest.mark.parametrize(("name", "error"), PUBLIC_ERRORS, ids=[n for n, _ in PUBLIC_ERRORS])
def test_every_exported_exception_shows_as_the_package_s(name, error):
    assert error.__module__ == "pyspark_streamtest"
    assert error.__qualname__ == name
    assert pickle.loads(pickle.dumps(error)) is error  # found again by that name


@pytest.mark.parametrize(("name", "error"), PUBLIC_ERRORS, ids=[n for n, _ in PUBLIC_ERRORS])
def test_an_error_made_from_its_message_pickles_with_its_attributes(name, error):
    try:
        raised = error("what went wrong")
    except TypeError:
        pytest.skip(f"{name} is made from its fields, not a message (see test_errors_made_from_"
                    "their_fields_pickle_with_them)")
    raised.extra = 3
    back = pickle.loads(pickle.dumps(raised))
    assert type(back) is error and back.args == raised.args and back.extra == 3


def test_errors_made_from_their_fields_pickle_with_them():
    from pyspark_streamtest import (
        Feature,
        IncompatibleCheckpointError,
        SparkInfrastructureError,
        StreamingQueryFailedError,
        UnsupportedFeatureError,
    )

    failed = StreamingQueryFailedError("counts", 3, "ValueError: boom")
    refused = IncompatibleCheckpointError("counts", 4, "STATE_STORE_KEY_SCHEMA", (),
                                          change="another key schema", operator="agg")
    missing = UnsupportedFeatureError(next(iter(Feature)), "3.5.9")
    machinery = SparkInfrastructureError("counts", 0, "SparkException: ...", "no worker",
                                         "load 14.0 / 9.0 / 5.0 on 2 cores")
    for error in (failed, refused, missing, machinery):
        error.extra = 7
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error) and back.extra == 7
    assert (back_of(failed).output, back_of(failed).batch_id) == ("counts", 3)
    assert (back_of(refused).change, back_of(refused).operator) == ("another key schema",
                                                                    "agg")
    assert back_of(missing).spark_version == "3.5.9"
    assert (back_of(machinery).reason, back_of(machinery).load) == (
        "no worker", "load 14.0 / 9.0 / 5.0 on 2 cores")


def back_of(error):
    return pickle.loads(pickle.dumps(error))


def test_a_failed_assertion_s_first_line_names_the_error_by_its_short_path():
    with pytest.raises(OutputMismatchError) as failed:
        assert_values_equal([{"user": "a", "count": 2}], [{"user": "a", "count": 1}])
    first = traceback.format_exception_only(failed.type, failed.value)[0]
    assert first.startswith("pyspark_streamtest.OutputMismatchError: values: ")
    assert failed.exconly().startswith("pyspark_streamtest.OutputMismatchError: ")
    back = pickle.loads(pickle.dumps(failed.value))
    assert type(back) is OutputMismatchError and str(back) == str(failed.value)


def test_the_scenario_error_keeps_where_it_happened_through_pickle():
    error = pyspark_streamtest.ScenarioError("bad value", file="a.yaml", line=3, field="steps")
    back = pickle.loads(pickle.dumps(error))
    assert (str(back), back.file, back.line, back.field) == (
        "a.yaml:3: steps: bad value", "a.yaml", 3, "steps")
