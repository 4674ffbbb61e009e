"""PySpark's NumPy converters for Py4J, asked only once NumPy is loaded
(``_spark/runtime/py4j_converters.py``): a run that never uses NumPy or pandas does not import
them on its first call to the JVM, and NumPy values still reach the JVM as PySpark
converts them."""

from __future__ import annotations

import textwrap

import numpy as np
from py4j import protocol
from pyspark.sql import functions as F

from pyspark_streamtest._spark.runtime import py4j_converters
from tests.helpers import python_json

_ASK = """
    import datetime, json, sys
    from py4j import protocol
    import pyspark.sql.types
    from pyspark_streamtest._spark.runtime import py4j_converters

    def names():
        return [type(getattr(c, "converter", c)).__name__ for c in protocol.INPUT_CONVERTER]

    def takers(values):
        return [[type(getattr(c, "converter", c)).__name__
                 for c in protocol.INPUT_CONVERTER if c.can_convert(v)] for v in values]

    def loaded():
        return [m for m in ("pandas", "numpy", "pyarrow", "pyspark.testing") if m in sys.modules]

    before = names()
    loaded_before = loaded()  # PySpark 3.5's types module imports NumPy itself
    guarded = py4j_converters.defer_numpy_converters() if GUARD else 0
    again = py4j_converters.defer_numpy_converters() if GUARD else 0
    plain = takers([1, "x", 2.5, True, None, [1, 2], {"a": 1}, (1, 2), {1},
                    datetime.datetime(2024, 1, 1), datetime.date(2024, 1, 1),
                    datetime.timedelta(seconds=3)])
    loaded_after = loaded()
    import numpy as np
    numpy = takers([np.array([1, 2]), np.array([1.5]), np.int64(3), np.float32(1.5),
                    np.bool_(True)])
    print(json.dumps({"before": before, "after": names(), "guarded": guarded,
                      "again": again, "plain": plain, "loaded_before": loaded_before,
                      "loaded_after": loaded_after, "numpy": numpy}))
"""


def test_asking_the_converters_imports_nothing_and_answers_as_pysparks_own():
    """What Py4J does with each argument of a call to the JVM: ask every converter.
    Guarded, the converters give the answers PySpark's own give (asked the same in a
    process without the guard), for plain values and, once NumPy is imported, for NumPy's;
    they keep their places in Py4J's list; and asking them imports nothing (PySpark 4's
    own import pandas and PyArrow on the first question)."""
    guarded = python_json("GUARD = True\n" + textwrap.dedent(_ASK))
    own = python_json("GUARD = False\n" + textwrap.dedent(_ASK))
    assert guarded["guarded"] == 2
    assert guarded["again"] == 0
    assert guarded["after"] == guarded["before"] == own["before"]
    assert guarded["before"][0] == "NumpyArrayConverter"  # PySpark prepends it
    assert guarded["plain"] == own["plain"]
    assert guarded["numpy"] == own["numpy"]
    assert guarded["numpy"][0][0] == "NumpyArrayConverter"  # the first taker converts
    assert guarded["loaded_after"] == guarded["loaded_before"]
    assert "pandas" not in guarded["loaded_after"]


def test_numpy_values_reach_the_jvm_as_pyspark_converts_them(spark):
    """In a session the library made, the converters are guarded, and NumPy arrays and
    scalars go through real calls to the JVM with PySpark's types (SPARK-40130/40131)."""
    guarded = [c for c in protocol.INPUT_CONVERTER
               if isinstance(c, py4j_converters._AskedOnceNumpyIsLoaded)]
    assert sorted(type(c.converter).__name__ for c in guarded) == [
        "NumpyArrayConverter", "NumpyScalarConverter"]

    def numpy_literals() -> tuple[list[tuple[str, str]], dict[str, object]]:
        frame = spark.range(1).select(
            F.lit(np.array([1, 2], dtype="int16")).alias("shorts"),
            F.lit(np.array([1.5, 2.5])).alias("doubles"),
            F.lit(np.int64(2**31)).alias("big"),
            F.lit(np.int32(7)).alias("small"),
            F.lit(np.float32(1.5)).alias("real"))
        row = frame.first()
        assert row is not None
        return frame.dtypes, row.asDict()

    dtypes, values = numpy_literals()
    positions = [protocol.INPUT_CONVERTER.index(c) for c in guarded]
    try:  # PySpark's own converters, unguarded, for the same literals
        for position, converter in zip(positions, guarded, strict=True):
            protocol.INPUT_CONVERTER[position] = converter.converter
        own_dtypes, own_values = numpy_literals()
    finally:
        for position, converter in zip(positions, guarded, strict=True):
            protocol.INPUT_CONVERTER[position] = converter
    assert (dtypes, values) == (own_dtypes, own_values)
    assert dtypes[:3] == [("shorts", "array<smallint>"), ("doubles", "array<double>"),
                          ("big", "bigint")]
    assert values["shorts"] == [1, 2] and values["big"] == 2**31 and values["real"] == 1.5
