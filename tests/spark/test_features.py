"""Optional Spark features: detection on the running session, typed errors, the skip marker."""

from __future__ import annotations

import pyspark
import pytest

from pyspark_streamtest import (
    Feature,
    UnsupportedFeatureError,
    UnsupportedSparkVersionError,
    require_feature,
    supported_features,
)

pytest_plugins = ["pytester"]


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_detection_by_reflection_agrees_with_the_release_notes(spark):
    # The driver detects features by looking for classes and methods; here the test
    # cross-checks that against the PySpark line each feature shipped in.
    line = _line(pyspark.__version__)
    expected = {f for f in Feature if line >= _line(f.added_in)}
    assert supported_features(spark) == expected


def test_require_feature_passes_or_names_the_line_that_adds_it(spark):
    have = supported_features(spark)
    for feature in Feature:
        if feature in have:
            require_feature(spark, feature)
            require_feature(spark, feature.value)
            continue
        with pytest.raises(UnsupportedFeatureError) as caught:
            require_feature(spark, feature)
        assert caught.value.feature is feature
        assert f"needs PySpark {feature.added_in} or later" in str(caught.value)
        assert isinstance(caught.value, UnsupportedSparkVersionError)


def test_unknown_feature_name_lists_the_known_ones(spark):
    with pytest.raises(ValueError, match="unknown feature 'time_travel'; known features: "
                                         "'state_store_reads', "):
        require_feature(spark, "time_travel")


def test_error_text_says_what_to_do():
    error = UnsupportedFeatureError(Feature.TRANSFORM_WITH_STATE, "3.5.9")
    assert str(error) == (
        "row-based transformWithState needs PySpark 4.1 or later; this session runs Spark "
        "3.5.9. Upgrade pyspark, or skip the test on older versions with "
        "@pytest.mark.streamtest_requires(Feature.TRANSFORM_WITH_STATE)"
    )


def test_marker_skips_exactly_the_missing_features(pytester, spark):
    # The child run borrows this process's session rather than making (and stopping) one.
    pytester.makeconftest(
        "import pytest\n"
        "from pyspark.sql import SparkSession\n"
        "@pytest.fixture(scope='session')\n"
        "def spark():\n"
        "    return SparkSession.getActiveSession()\n"
    )
    pytester.makepyfile(
        "import pytest\n"
        "from pyspark_streamtest import Feature\n"
        + "".join(
            f"@pytest.mark.streamtest_requires(Feature.{f.name})\n"
            f"def test_{f.value}():\n    pass\n"
            for f in Feature
        )
        + "@pytest.mark.streamtest_requires('no_such_feature')\n"
        "def test_bad_name():\n    pass\n"
    )
    result = pytester.runpytest_inprocess("-rs")
    have = supported_features(spark)
    missing = [f for f in Feature if f not in have]
    result.assert_outcomes(passed=len(have), skipped=len(missing), errors=1)
    result.stdout.fnmatch_lines(["*unknown feature 'no_such_feature'*"])
    result.stdout.fnmatch_lines(
        [f"*needs {f.description}, added in PySpark {f.added_in} (this is *" for f in missing]
    )
