"""PySpark's own frames leave the Python tracebacks of Spark's error text; the user's
stay (issue 36)."""

from __future__ import annotations

from pyspark_streamtest._spark.query.python_traceback import without_pyspark_frames

SITE = "/venv/lib/python3.11/site-packages"
# As Spark 4.3 reports a transformWithStateInPandas processor that raised.
PROCESSOR_FAILED = f'''org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "{SITE}/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 3431, in main
    process()
  File "{SITE}/pyspark/python/lib/pyspark.zip/pyspark/sql/pandas/serializers.py", line 1489, in dump_stream
    for batch in iterator:
                 ^^^^^^^^
  File "/home/me/project/jobs/alerts.py", line 41, in handleInputRows
    raise ValueError(f"bad reading {{value}}")
ValueError: bad reading -1
'''


def test_pyspark_s_frames_go_and_the_user_s_stay():
    assert without_pyspark_frames(PROCESSOR_FAILED) == (
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/home/me/project/jobs/alerts.py", line 41, in handleInputRows\n'
        '    raise ValueError(f"bad reading {value}")\n'
        "ValueError: bad reading -1\n")


def test_a_traceback_only_of_pyspark_s_frames_is_left_whole():
    inside = (f'Traceback (most recent call last):\n  File "{SITE}/pyspark/worker.py", '
              "line 1, in main\n    process()\nRuntimeError: internal\n")
    assert without_pyspark_frames(inside) == inside


def test_text_without_a_traceback_is_unchanged():
    text = "[CAST_INVALID_INPUT] The value 'x' of the type \"STRING\" cannot be cast"
    assert without_pyspark_frames(text) == text


def test_a_user_folder_named_like_pyspark_stays():
    text = ('Traceback (most recent call last):\n  File "/home/me/pyspark_jobs/a.py", '
            "line 3, in f\n    g()\nValueError: x\n")
    assert without_pyspark_frames(text) == text
