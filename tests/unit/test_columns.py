"""The bulk pipe's column path writes the per-row path's lines, or steps aside (no Spark)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from hypothesis import event, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql import types as T

from pyspark_streamtest.core.columns import ColumnLines
from pyspark_streamtest.core.values import StructEncoder
from pyspark_streamtest.errors import StreamTestError

UTC = timezone.utc
FAST = T.StructType([
    T.StructField("k", T.StringType()), T.StructField("n", T.IntegerType()),
    T.StructField("tiny", T.ByteType()), T.StructField("big", T.LongType()),
    T.StructField("x", T.DoubleType()), T.StructField("ok", T.BooleanType()),
    T.StructField("ts", T.TimestampType()), T.StructField('odd "%s" name', T.StringType()),
    T.StructField("must", T.StringType(), nullable=False),
])


class _Number(int):
    """An int subclass: the per-row path takes it, the column path steps aside."""


_FITS = {
    T.StringType: st.text(alphabet=st.characters(max_codepoint=127)),
    T.IntegerType: st.integers(-(2**31), 2**31 - 1),
    T.ByteType: st.integers(-128, 127),
    T.LongType: st.integers(-(2**63), 2**63 - 1),
    T.DoubleType: st.floats(allow_nan=False, allow_infinity=False),
    T.BooleanType: st.booleans(),
    T.TimestampType: st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31),
                                  timezones=st.just(UTC)),
}
_ODD = st.one_of(
    st.none(), st.text(alphabet=st.characters(min_codepoint=128), min_size=1), st.integers(),
    st.just(2**31), st.just(-(2**63) - 1), st.floats(), st.just(float("nan")), st.booleans(),
    st.builds(_Number, st.integers(0, 9)), st.dates(),
    st.datetimes(), st.datetimes(timezones=st.just(timezone(timedelta(hours=3)))),
    st.just(datetime(1, 1, 2, tzinfo=UTC)), st.just(datetime(9999, 12, 30, tzinfo=UTC)),
)


@st.composite
def _rows(draw: st.DrawFn, schema: T.StructType, odd: int) -> object:
    cells = [draw(_FITS[type(f.dataType)] if draw(st.integers(0, 99)) >= odd else _ODD)
             for f in schema.fields]
    shape = draw(st.integers(0, 99))
    if shape < odd // 4:
        return draw(st.sampled_from([list(cells), tuple(cells[:-1]), (*cells, 1),
                                     Row(**{f.name: c for f, c in zip(schema.fields, cells,
                                                                       strict=True)})]))
    return tuple(cells)


def _row_path(encoder: StructEncoder, values: list[object]) -> list[str] | None:
    try:
        return [encoder.json_line(encoder.as_mapping(v, "value")) for v in values]
    except StreamTestError:
        return None


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_column_path_writes_the_row_paths_lines_or_steps_aside(data):
    odd = data.draw(st.sampled_from([0, 0, 2, 20]))  # in 100 cells, how many do not fit
    # Repeated rows: a time on half the rows or more is written once (_timestamps).
    values = data.draw(st.lists(_rows(FAST, odd), max_size=8)) * data.draw(st.sampled_from([1, 2]))
    expected = _row_path(StructEncoder(FAST), values)
    got = ColumnLines(FAST).lines(values)
    if got is not None:
        assert got == expected
    event("column path" if got is not None else "row path only")
    times = len({v[6] for v in values if isinstance(v, tuple) and len(v) > 6})
    event("times written once each" if got is not None and times * 2 <= len(values) else "-")


def test_usual_rows_of_every_fast_type_take_the_column_path():
    values = [("a", 1, -128, 2**63 - 1, 0.1, True, datetime(2024, 1, 1, tzinfo=UTC), "b", "c"),
              ('q"\\', -7, 127, 0, -1e300, False, datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=UTC),
               "", "%s")]
    lines = ColumnLines(FAST).lines(values)
    assert lines is not None
    assert lines == _row_path(StructEncoder(FAST), values)


def test_other_column_types_and_other_shapes_take_the_row_path():
    with_date = T.StructType([T.StructField("k", T.StringType()),
                              T.StructField("d", T.DateType())])
    assert ColumnLines(with_date).lines([("a", date(2024, 1, 1))]) is None
    assert ColumnLines(FAST).lines([]) is None
    plain = T.StructType([T.StructField("k", T.StringType())])
    assert ColumnLines(plain).lines([{"k": "a"}]) is None
    assert ColumnLines(plain).lines([("a",), ["b"]]) is None
    assert ColumnLines(plain).lines([("a",), ("é",)]) is None
    assert ColumnLines(plain).lines([("a",), ("b",)]) == ['{"k":"a"}', '{"k":"b"}']
