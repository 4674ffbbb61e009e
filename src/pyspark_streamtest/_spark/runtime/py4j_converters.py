"""PySpark's NumPy input converters for Py4J, asked only once NumPy is loaded.

Py4J asks every registered input converter about every argument of every call to the
JVM that is not a JVM object. PySpark registers two for NumPy (``NumpyArrayConverter``,
``NumpyScalarConverter`` in ``pyspark.sql.types``). In PySpark 4 (read in 4.3), to answer,
each first imports ``pyspark.testing.utils`` for its ``have_numpy``, and that module
imports pandas, PyArrow and more to learn what the machine has. So the first call to the
JVM with an argument costs a process 0.5-0.8 s (2-core machine), in a test run that never
uses pandas, NumPy or PySpark's testing module. (PySpark 3.5's converters import NumPy
with their module instead; there the guard only hands each question on.)

:func:`defer_numpy_converters` puts each of the two behind a guard that answers "no"
while NumPy is not imported, and asks the converter itself once it is. The answers are
the same as the converters' own for every argument: an object is a NumPy array or scalar
only if NumPy's module was imported, and then the converter answers as before (its
``have_numpy`` is true wherever NumPy imports). Only the import of PySpark's testing
module, which nothing else of a run needed, is left out.
"""

from __future__ import annotations

import sys
from typing import Any

from ...errors import hide_our_frames

__tracebackhide__ = hide_our_frames

_NUMPY_CONVERTERS = ("NumpyArrayConverter", "NumpyScalarConverter")


class _AskedOnceNumpyIsLoaded:
    """One of PySpark's NumPy converters, asked only once NumPy is imported."""

    def __init__(self, converter: Any) -> None:
        self.converter = converter

    def can_convert(self, obj: Any) -> bool:
        if "numpy" not in sys.modules:
            return False
        return bool(self.converter.can_convert(obj))

    def convert(self, obj: Any, gateway_client: Any) -> Any:
        return self.converter.convert(obj, gateway_client)


def defer_numpy_converters() -> int:
    """Put PySpark's registered NumPy converters behind the guard, each in its place in
    Py4J's list (their order decides which converter takes a value); the number put
    behind it now (0 when already done, or where PySpark registered none)."""
    import pyspark.sql.types  # noqa: F401  (registers PySpark's converters)
    from py4j import protocol

    converters: list[Any] = protocol.INPUT_CONVERTER
    guarded = 0
    for index, converter in enumerate(converters):
        if (type(converter).__name__ in _NUMPY_CONVERTERS
                and type(converter).__module__ == "pyspark.sql.types"):
            converters[index] = _AskedOnceNumpyIsLoaded(converter)
            guarded += 1
    return guarded
