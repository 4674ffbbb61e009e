"""JVM ``MemoryStream[String]`` inputs carrying JSON lines.

Rows reach the JVM as one string of JSON lines per step: the string is split in
the JVM and appended with one ``addData`` call (one offset, so everything added
between two triggers lands in one micro-batch). Parsing to the declared schema
happens inside the query (``from_json`` with FAILFAST), so moving rows in costs a
handful of Py4J calls and no Spark job, whatever the number of rows.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ...errors import hide_our_frames
from ..jvm import JavaObject, Jvm
from ..versions import capabilities

__tracebackhide__ = hide_our_frames


def _classic_dataframe_class() -> Any:
    try:  # 4.x: the classic DataFrame wraps a JVM Dataset
        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
    except ImportError:  # 3.5: there is only one DataFrame
        return DataFrame
    return ClassicDataFrame


_CLASSIC_DATAFRAME = _classic_dataframe_class()


def with_exact_schema(spark: Any, df: DataFrame, schema_json: str) -> DataFrame:
    """``df``'s rows under the schema of ``schema_json`` as it is (its nullability too,
    which PySpark's ``createDataFrame`` and a rebuilt struct may change), made in the
    JVM."""
    jvm = Jvm(spark)
    jdf = jvm.jspark.createDataFrame(df._jdf.rdd(), jvm.jspark.parseDataType(schema_json))
    return wrap_dataframe(jvm, jdf)


def wrap_dataframe(jvm: Jvm, jdf: JavaObject, *, own_session: bool = False) -> DataFrame:
    """The JVM Dataset ``jdf`` as a PySpark DataFrame of ``jvm``'s session, or with
    ``own_session`` of a PySpark session over the Dataset's own (what PySpark's
    ``foreachBatch`` hands the user: a micro-batch belongs to its query's cloned session,
    where ``batch_df.sparkSession.sql`` sees the batch's temp views)."""
    if own_session:
        session = SparkSession(jvm.spark.sparkContext, jdf.sparkSession())
        return _CLASSIC_DATAFRAME(jdf, session)  # type: ignore[no-any-return]
    frame: DataFrame = _CLASSIC_DATAFRAME(jdf, jvm.spark)
    return frame


class JsonMemoryStream:
    """One JVM MemoryStream of JSON lines and the typed DataFrame over it."""

    def __init__(self, jvm: Jvm, schema: StructType) -> None:
        self._jvm = jvm
        caps = capabilities(jvm)
        factory = jvm.scala_object(caps.memory_stream_class)
        encoder = jvm.jvm.org.apache.spark.sql.Encoders.STRING()
        context = jvm.jspark if caps.memory_stream_takes_session else jvm.jspark.sqlContext()
        self._stream: JavaObject = factory.apply(encoder, context)
        self.offset = -1
        """The stream's last offset (one per ``addData``; -1 before any)."""
        self._newline = jvm.jvm.java.util.regex.Pattern.compile("\n")
        raw = self._stream.toDF()
        self.raw_attribute: JavaObject = raw.queryExecution().analyzed().output().head()
        """The source's ``value`` attribute (JSON lines) in the query's plan."""
        self.raw_expr_id: int = int(self.raw_attribute.exprId().id())
        functions = jvm.jvm.org.apache.spark.sql.functions
        options = jvm.jvm.java.util.HashMap()
        options.put("mode", "FAILFAST")
        jschema = jvm.jspark.parseDataType(schema.json())
        parsed = functions.from_json(functions.col("value"), jschema, options).alias("r")
        jdf = raw.select(jvm.seq([parsed])).select(jvm.seq([functions.col("r.*")]))
        self.dataframe: DataFrame = wrap_dataframe(jvm, jdf)

    def reset(self) -> None:
        """Empty the source (``MemoryStream.reset()``: no rows, offsets from the start),
        for a new query on a fresh checkpoint; never while a query reads it."""
        self._stream.reset()
        self.offset = -1

    def add_empty_batch(self) -> None:
        """Append an offset with no rows (Spark's ``AddData(stream)`` with no data): the
        next trigger runs a data batch of zero rows."""
        self._stream.addData(self._jvm.seq([]))
        self.offset += 1

    def pad_to(self, offset: int | None) -> None:
        """Append empty offsets until the stream's last offset is ``offset``: a new stream
        then continues where a checkpoint's source stood (a memory stream's offsets are
        positions in its own list of added blocks, so the blocks before must exist)."""
        while offset is not None and self.offset < offset:
            self.add_empty_batch()

    def add_json_lines(self, lines: list[str]) -> None:
        """Append rows (each one JSON object without newlines) as one offset."""
        jlist = self._newline.splitAsStream("\n".join(lines)).toList()
        self._stream.addData(self._jvm.to_seq(jlist))
        self.offset += 1

    def add_json_blocks(self, blocks: list[list[str]]) -> None:
        """Append one offset per block, in order. Without ``numPartitions`` Spark's
        MemoryStream reads each offset of a batch as one input partition, so block ``i``
        of a step is the batch's source partition ``i`` (an empty block is an empty
        partition)."""
        for block in blocks:
            if block:
                self.add_json_lines(block)
            else:
                self.add_empty_batch()
