"""The Spark Connect adapter (``_spark/connect/session.py``, issue 40's foundation): a Connect
DataFrame over the driver's own memory stream, planned by the server's planner into a
query the driver starts with its clock. Connect mode is a whole process's, so the
Connect side runs in a process of its own; its query runs with Spark's JVM clock and
memory sink (``_spark/alone.py``), and this test reads what it printed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pyspark_streamtest._spark.jvm import Jvm
from pyspark_streamtest.errors import SparkConnectNotSupportedError

SCRIPT = textwrap.dedent('''
    import json, sys, tempfile
    from pyspark.sql.types import StructType, StructField, StringType, TimestampType
    from pyspark_streamtest._spark.connect import session as connect
    from pyspark_streamtest._spark.alone import AloneQuery
    from pyspark_streamtest._spark.jvm import Jvm
    from pyspark_streamtest._spark.query.memory_stream import JsonMemoryStream
    from pyspark_streamtest._spark.runtime.session import build_test_session

    token = connect.new_token()
    classic = build_test_session(master="local[1]", conf=connect.server_settings(token))
    client = connect.connect_client(connect.server_port(Jvm(classic)), token)
    holder = connect.session_holder(Jvm(classic), client)
    server = Jvm(connect.server_session(Jvm(classic), holder))
    schema = StructType([StructField("user", StringType()), StructField("ts", TimestampType())])
    stream = JsonMemoryStream(server, schema)
    relation_id, clicks = connect.to_connect(holder, client, stream.dataframe)

    # The topology, as Connect code writes it.
    from pyspark.sql import functions as F
    shout = F.udf(lambda s: s.upper(), "string", useArrow=False)
    counts = (clicks.withWatermark("ts", "10 seconds").withColumn("user", shout("user"))
              .groupBy(F.window("ts", "10 seconds"), "user").count())
    facts = {"topology_frame": type(counts).__module__, "streaming": clicks.isStreaming}

    query = AloneQuery(server, connect.to_classic(server, holder, counts), name="counts",
                       checkpoint=tempfile.mkdtemp(), output_mode="append", start_ms=0,
                       timeout_s=120)
    query.await_first_trigger()
    def rows():
        return [{"start": r.window.start.isoformat(), "user": r.user, "count": r["count"]}
                for r in query.batch_rows()]
    stream.add_json_lines([json.dumps({"user": "a", "ts": "2024-01-01T00:00:01Z"}),
                           json.dumps({"user": "a", "ts": "2024-01-01T00:00:07Z"})])
    facts["batch0_rows_in"] = query.run_trigger_at(1000, 0)["numInputRows"]
    facts["batch0"] = rows()
    stream.add_json_lines([json.dumps({"user": "b", "ts": "2024-01-01T00:00:21Z"})])
    query.run_trigger_at(2000, 1)
    facts["batch1"] = rows()
    query.run_trigger_at(3000, 2)  # the no-data batch the watermark of 11 s runs
    facts["batch2"] = rows()
    facts["client_sees"] = [q.name for q in client.streams.active]
    query.stop()
    connect.forget(holder, [relation_id])
    print("FACTS " + json.dumps(facts), flush=True)
    client.stop()  # and the JVM with it (PySpark's local Connect), so the process ends
''')


def test_a_connect_topology_runs_on_the_driver_s_stream_as_spark_plans_it(spark, tmp_path):
    try:
        Jvm(spark).class_for_name("org.apache.spark.sql.connect.service.SessionKey")
    except Exception:
        pytest.skip("PySpark 3.5 has no Connect server in its JVM (see the next test)")
    script = tmp_path / "connect_run.py"
    script.write_text(SCRIPT)
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, check=False)
    found = [line for line in ran.stdout.splitlines() if line.startswith("FACTS ")]
    assert ran.returncode == 0 and found, ran.stdout[-3000:] + ran.stderr[-3000:]
    facts = json.loads(found[0].removeprefix("FACTS "))
    assert facts["topology_frame"] == "pyspark.sql.connect.dataframe"
    assert facts["streaming"] is True
    assert facts["batch0_rows_in"] == 2
    assert facts["batch0"] == [] and facts["batch1"] == []
    # the watermark (21 s - 10 s) closes the first window; the UDF ran in a Python worker
    assert facts["batch2"] == [{"start": "2024-01-01T00:00:00", "user": "A", "count": 2}]
    assert facts["client_sees"] == ["counts"]


def test_a_spark_without_a_connect_server_says_so(spark):
    from pyspark_streamtest._spark.connect import session as connect

    jvm = Jvm(spark)
    if jvm.class_exists("org.apache.spark.sql.connect.service.SessionKey"):
        connect.require_connect_server(jvm)  # 4.0+: there is one, nothing raised
        connect.require_server_jar()
        return
    with pytest.raises(SparkConnectNotSupportedError, match=r"use PySpark 4\.0\+"):
        connect.server_port(jvm)
    # --streamtest-connect is refused before a JVM is asked to load a missing plugin
    with pytest.raises(SparkConnectNotSupportedError, match=r"ships no Spark Connect server"):
        connect.require_server_jar()
