"""Finding the record that failed a batch: the error's signature and the halving."""

from __future__ import annotations

from pyspark_streamtest import TestRecord
from pyspark_streamtest.driver.queries._culprit import bisect_culprit, error_signature

PYTHON_CAUSE = """org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/work/test_x.py", line 12, in parse
    raise ValueError(f"cannot parse {value!r}")
ValueError: cannot parse 'poison'
\tat org.apache.spark.api.python.BasePythonRunner..."""


def test_the_signature_is_the_python_exception_line_else_the_error_class():
    assert error_signature(PYTHON_CAUSE) == "ValueError: cannot parse 'poison'"
    assert error_signature("[CAST_OVERFLOW] The value 300 of the type \"INT\" cannot be cast"
                           ) == "[CAST_OVERFLOW]"
    assert error_signature("java.lang.OutOfMemoryError: Java heap space") is None


def test_halving_finds_the_one_record_and_gives_up_on_combinations():
    records = [TestRecord({"n": n}) for n in range(11)]
    calls: list[int] = []

    def raises_on(bad: set[int]):
        def raises(part):
            calls.append(len(part))
            return any(r.value["n"] in bad for r in part)
        return raises

    assert bisect_culprit(records, raises_on({7})) == records[7]
    assert len(calls) <= 2 * 4 + 1  # about 2 log2 n replays
    assert bisect_culprit(records, raises_on({2, 9})) == records[2]  # the first half's
    assert bisect_culprit(records, raises_on(set())) is None
    assert bisect_culprit(records, lambda part: len(part) == 11) is None  # only together
    assert bisect_culprit([], raises_on({0})) is None
