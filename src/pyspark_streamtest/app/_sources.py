"""``spark.readStream`` under ``from_app``: each streaming source the job reads becomes
one of the driver's inputs, with the columns the real source has."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any, cast

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..errors import TopologyError, UnsupportedAppCallError, hide_our_frames
from ._context import AppRun, last_segment
from .landing import FileDeclarer, lands_files

__tracebackhide__ = hide_our_frames

FILE_FORMATS = ("json", "csv", "parquet", "orc", "text")
SOURCES = ("kafka", "rate", "rate-micro-batch", "socket", *FILE_FORMATS, "delta", "table")
_RATE_SCHEMA = "timestamp TIMESTAMP, value BIGINT"
# Options of a file source that decide how many files one batch takes. The driver puts
# every row piped between two steps into one batch, so it cannot honour them for rows
# (Spark's file source honours them itself for a source that lands files:
# from_app(land_files=...)). A Kafka source's limits are honoured (see _kafka_limits).
_RATE_LIMITS = ("maxFilesPerTrigger", "maxBytesPerTrigger")
_KAFKA_LIMITS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
# Spark's time strings (JavaUtils.timeStringAsMs): a number, and a unit (ms without one).
_TIME_STRING = re.compile(r"(-?[0-9]+)([a-z]+)?")
_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
                  "h": 3_600_000, "d": 86_400_000}


class AppStreamReader:
    """Stands in for ``DataStreamReader`` while the job runs (same verbs, same chaining)."""

    def __init__(self, run: AppRun) -> None:
        self._run = run
        self._format: str | None = None
        self._options: dict[str, str] = {}
        self._schema: StructType | str | None = None

    # --- the builder verbs ------------------------------------------------------------------
    def format(self, source: str) -> AppStreamReader:
        self._format = str(source)
        return self

    def option(self, key: str, value: Any) -> AppStreamReader:
        if value is not None:
            self._options[str(key)] = _option_text(value)
        return self

    def options(self, **options: Any) -> AppStreamReader:
        for key, value in options.items():
            self.option(key, value)
        return self

    def schema(self, schema: StructType | str) -> AppStreamReader:
        self._schema = schema
        return self

    # --- the verbs that return the stream -------------------------------------------------------
    def load(
        self, path: str | None = None, format: str | None = None,
        schema: StructType | str | None = None, **options: Any,
    ) -> DataFrame:
        if format is not None:
            self.format(format)
        if schema is not None:
            self.schema(schema)
        self.options(**options)
        source = (self._format or self._run.declarer.spark.conf.get(
            "spark.sql.sources.default", "parquet") or "parquet").lower()
        if path is None:
            path = self._options.get("path")
        if source == "kafka":
            return self._kafka()
        if source in ("rate", "socket"):  # SupportsTriggerAvailableNow they lack
            self._run.without_available_now.add(self._run.input_name(source, source))
        if source in ("rate", "rate-micro-batch"):
            return self._typed(source, source, _RATE_SCHEMA, "timestamp")
        if source == "socket":
            timestamped = self._options.get("includeTimestamp", "false").lower() == "true"
            schema_text = "value STRING, timestamp TIMESTAMP" if timestamped else "value STRING"
            return self._typed("socket", "socket", schema_text,
                               "timestamp" if timestamped else None)
        if source in (*FILE_FORMATS, "delta"):
            if path is None:
                raise UnsupportedAppCallError(
                    f"readStream.format({source!r}).load() has no path; Spark needs one too"
                )
            return self._file(source, path)
        raise UnsupportedAppCallError(
            f"streaming source {source!r} is not supported by from_app; supported: "
            f"{', '.join(SOURCES)}; or wrap the job in a Topology"
        )

    def json(self, path: str, schema: StructType | str | None = None, **options: Any) -> DataFrame:
        return self.load(path, "json", schema, **options)

    def csv(self, path: str, schema: StructType | str | None = None, **options: Any) -> DataFrame:
        return self.load(path, "csv", schema, **options)

    def parquet(self, path: str, **options: Any) -> DataFrame:
        return self.load(path, "parquet", None, **options)

    def orc(self, path: str, **options: Any) -> DataFrame:
        return self.load(path, "orc", None, **options)

    def text(self, path: str, **options: Any) -> DataFrame:
        return self.load(path, "text", None, **options)

    def table(self, tableName: str) -> DataFrame:  # noqa: N803 (PySpark's name)
        return self._typed(tableName, tableName, self._stated_schema(tableName, "table"), None)

    def __getattr__(self, name: str) -> Any:
        raise UnsupportedAppCallError(
            f"readStream.{name}(...) is not supported by from_app; the driver supports "
            "format, option, options, schema, load, json, csv, parquet, orc, text and table"
        )

    # --- sources ------------------------------------------------------------------------------
    def _kafka(self) -> DataFrame:
        topics = self._topics()
        assigned = self._assigned()
        headers = self._options.get("includeHeaders", "false").lower() == "true"
        limits = self._kafka_limits()
        frames = []
        names = []
        for topic in topics:
            name = self._run.input_name(topic, topic)
            names.append(name)
            parts = assigned.get(topic)
            partitions = self._partitions(name, topic, parts)
            frames.append(self._once(
                name, ("kafka", headers, tuple(sorted(limits.items(), key=str)), parts),
                lambda name=name, parts=parts, partitions=partitions:
                    self._run.declarer.kafka_input(
                        name, partitions=partitions, include_headers=headers,
                        assign=parts, **limits),
            ))
        if limits and len(names) > 1:  # one source: its topics share the limits
            self._run.declarer._share_read_limit(names)
        union = frames[0]
        for frame in frames[1:]:
            union = union.union(frame)
        return union

    def _kafka_limits(self) -> dict[str, Any]:
        """The source's ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and
        ``maxTriggerDelay`` (Spark reads Kafka options in any case), parsed as Spark
        parses them, as ``kafka_input`` keywords; an option in ``ignore_options`` is
        left out (the job runs without it)."""
        given = {key.lower(): value for key, value in self._options.items()}
        limits: dict[str, Any] = {}
        for option, keyword in zip(_KAFKA_LIMITS, (
                "max_offsets_per_trigger", "min_offsets_per_trigger", "max_trigger_delay"),
                strict=True):
            text = given.get(option.lower())
            if text is None or option in self._run.settings.ignore_options:
                continue
            if option == "maxTriggerDelay":
                limits[keyword] = timedelta(milliseconds=_time_string_ms(option, text))
            elif re.fullmatch(r"-?[0-9]+", text.strip()):
                limits[keyword] = int(text)
            else:
                raise UnsupportedAppCallError(
                    f"the job's kafka source sets {option}={text!r}: Spark reads it as a "
                    "whole number of records (Long) and fails the query on this value")
        minimum, maximum = (limits.get("min_offsets_per_trigger"),
                            limits.get("max_offsets_per_trigger"))
        if minimum is not None and maximum is not None and minimum > maximum:
            raise UnsupportedAppCallError(
                f"the job's kafka source sets minOffsetsPerTrigger={minimum} above "
                f"maxOffsetsPerTrigger={maximum}; Spark refuses it too")
        return limits

    def _assigned(self) -> dict[str, tuple[int, ...]]:
        """The partitions an ``assign`` option names, by topic (``{"t": [0, 2]}``)."""
        if "assign" not in self._options:
            return {}
        return {topic: tuple(sorted(set(parts)))
                for topic, parts in _assign_json(self._options["assign"]).items()}

    def _partitions(self, name: str, topic: str, assigned: tuple[int, ...] | None) -> int:
        """The topic's partition count: ``from_app(partitions=)``, else enough for the
        partitions the job assigns (the production topic has at least those), else 1."""
        given = self._run.settings.partitions.get(name)
        if assigned is None:
            return 1 if given is None else given
        if given is None:
            return max(assigned) + 1
        if max(assigned) >= given:
            raise UnsupportedAppCallError(
                f"the job's kafka source assigns partitions {list(assigned)} of {topic!r}, "
                f"which has {given} here (from_app(partitions={{{name!r}: {given}}})): Spark "
                "fails a query assigned a partition its topic does not have; give the topic "
                f"at least {max(assigned) + 1} partitions")
        return given

    def _topics(self) -> list[str]:
        options = self._options
        given = [key for key in ("subscribe", "subscribePattern", "assign") if key in options]
        if len(given) != 1:
            raise UnsupportedAppCallError(
                "readStream.format('kafka') needs exactly one of the options subscribe, "
                f"subscribePattern, assign (Spark's rule too); the job gave {given or 'none'}"
            )
        if "subscribe" in options:
            topics = [t.strip() for t in options["subscribe"].split(",") if t.strip()]
        elif "assign" in options:
            topics = list(_assign_json(options["assign"]))
        else:
            pattern = options["subscribePattern"]
            if not self._run.settings.topics:
                raise UnsupportedAppCallError(
                    f"the job subscribes to the pattern {pattern!r}: the driver's inputs exist "
                    "before the test pipes anything, so name the topics it should match with "
                    "from_app(..., topics=['orders-eu', ...])"
                )
            topics = [t for t in self._run.settings.topics if re.fullmatch(pattern, t)]
            if not topics:
                raise UnsupportedAppCallError(
                    f"subscribePattern {pattern!r} matches none of the topics given to from_app "
                    f"({', '.join(self._run.settings.topics)})"
                )
        if not topics:
            raise UnsupportedAppCallError("readStream.format('kafka') names no topic")
        return topics

    def _file(self, source: str, path: str) -> DataFrame:
        name = self._run.input_name(path, last_segment(path))
        if lands_files(self._run.settings, name):
            return self._landing(source, path, name)
        self._refuse_rate_limits(source)
        if source == "text":
            schema: StructType | str = "value STRING"
        elif self._schema is not None:
            schema = self._schema
        else:
            schema = self._stated_schema(path, f"{source} path")
        return self._typed(path, last_segment(path), schema, None)

    def _landing(self, source: str, path: str, name: str) -> DataFrame:
        """The job's own reader (format, schema, options) over the input's landing
        directory instead of ``path``: Spark's file source reads the files landed."""
        if source == "delta":
            raise UnsupportedAppCallError(
                f"from_app(land_files=...) lists {name!r}, a Delta table: its files are "
                "written with a transaction log, not landed one by one; leave it out of "
                "land_files= and pipe its rows")
        schema = self._schema if self._schema is not None else self._run.settings.schemas.get(
            path)
        options = {k: v for k, v in self._options.items() if k.lower() != "path"}
        declarer = cast(FileDeclarer, self._run.declarer)
        key = ("files", source, schema if isinstance(schema, (str, type(None)))
               else schema.json(), tuple(sorted(options.items())))
        try:
            return self._once(name, key, lambda: declarer.file_input(
                name, format=source, schema=schema, options=options))
        except UnsupportedAppCallError:
            raise
        except TopologyError as error:
            hint = ("" if schema is not None or source == "text" else
                    f"; give the schema with from_app(..., schemas={{{path!r}: '...'}})")
            raise UnsupportedAppCallError(f"the job's {source} source {path!r}: {error}{hint}"
                                          ) from None

    def _stated_schema(self, source: str, what: str) -> StructType | str:
        stated = self._run.settings.schemas.get(source)
        if stated is not None:
            return stated
        if what == "table":
            spark = self._run.declarer.spark
            if spark.catalog.tableExists(source):
                return spark.table(source).schema
        raise UnsupportedAppCallError(
            f"the job reads the {what} {source!r} without stating its schema; the driver "
            "needs it to type the input: create the table in the test session, or give "
            f"from_app(..., schemas={{{source!r}: 'id BIGINT, ...'}})"
        )

    def _typed(
        self, source: str, default_name: str, schema: StructType | str,
        timestamp_column: str | None,
    ) -> DataFrame:
        name = self._run.input_name(source, default_name)
        key = ("typed", schema if isinstance(schema, str) else schema.json())
        return self._once(name, key, lambda: self._run.declarer.input(
            name, schema=schema, timestamp_column=timestamp_column))

    def _once(self, name: str, key: object, declare: Any) -> DataFrame:
        """A source the job reads twice with the same settings is one input (one call of
        the job gives each query its own DataFrame only through the driver)."""
        known = self._run.sources.get(name)
        if known is not None:
            if known[0] != key:
                raise UnsupportedAppCallError(
                    f"the job reads {name!r} twice with different settings; give the two "
                    "reads different input names with from_app(..., inputs=...)"
                )
            return known[1]
        frame: DataFrame = declare()
        self._run.sources[name] = (key, frame)
        return frame

    def _refuse_rate_limits(self, source: str) -> None:
        for option in _RATE_LIMITS:
            if option in self._options and option not in self._run.settings.ignore_options:
                raise UnsupportedAppCallError(
                    f"the job's {source} source sets {option}={self._options[option]}: the "
                    "driver puts every record piped between two steps into one batch and "
                    "cannot honour it. Pipe as many records per step as one batch should "
                    f"take, and pass from_app(..., ignore_options={{{option!r}}})"
                )


def _assign_json(text: str) -> dict[str, list[int]]:
    """The ``assign`` option as Spark reads it: a JSON object of topic -> partitions."""
    try:
        assigned = json.loads(text)
    except ValueError:
        assigned = None
    if not isinstance(assigned, dict) or not assigned or not all(
            isinstance(parts, list) and all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts)
            for parts in assigned.values()):
        raise UnsupportedAppCallError(
            f"the job's kafka source sets assign={text!r}: Spark reads it as a JSON object "
            'of topics and their partitions, such as {"orders": [0, 2]}, and fails the '
            "query on anything else")
    empty = [str(topic) for topic, parts in assigned.items() if not parts]
    if empty:
        raise UnsupportedAppCallError(
            f"the job's kafka source assigns no partition of {', '.join(map(repr, empty))}: "
            "its query would read nothing of it; name the partitions to read, or leave the "
            "topic out of assign")
    return {str(topic): parts for topic, parts in assigned.items()}


def _time_string_ms(option: str, text: str) -> int:
    """``text`` as Spark's ``JavaUtils.timeStringAsMs`` reads it: ``15m``, ``10s``,
    ``500`` (milliseconds); microseconds round down."""
    found = _TIME_STRING.fullmatch(text.strip().lower())
    unit = found.group(2) if found else None
    if found is None or (unit is not None and unit not in _TIME_UNITS_MS):
        raise UnsupportedAppCallError(
            f"the job's kafka source sets {option}={text!r}, which Spark cannot read as a "
            "time (a number and a unit: us, ms, s, m, min, h, d)")
    return int(int(found.group(1)) * _TIME_UNITS_MS[unit or "ms"])


def _option_text(value: Any) -> str:
    """Option values as PySpark sends them: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
