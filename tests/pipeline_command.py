"""``spark-pipelines run`` itself, run on a copy of a pipeline's definitions: Spark
alone, for the checks and the benchmark that hold PipelineTestDriver to it. Each run
starts the command's two JVMs; a Hive catalog with an embedded Derby metastore, in a
folder of the caller's, keeps the tables between runs as a production catalog does (the
command's default in-memory catalog cannot run a second update)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "orders_pipeline"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
COMMAND_SECONDS = 600


def order(order_id: str, customer: str, amount: int, minute: int) -> str:
    ts = (T0 + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
    return json.dumps({"order_id": order_id, "customer": customer, "amount": amount,
                       "ts": ts})


def command_pipeline(root: Path, landing: Path) -> Path:
    """The example's definitions, unchanged, under a spec that names the landing folder
    and a storage of the test's (as the driver's own configuration and storage do)."""
    folder = root / "orders_pipeline"
    shutil.copytree(EXAMPLE / "transformations", folder / "transformations")
    (folder / "spark-pipeline.yml").write_text(
        "name: orders\n"
        f"storage: {(root / 'storage').as_uri()}\n"
        f"configuration:\n  orders.path: {landing}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    return folder


def command_conf(root: Path) -> Path:
    """Spark's settings for the command's JVMs: a Hive catalog in an embedded Derby
    metastore and a warehouse of the test's, so that each run finds the tables of the
    one before."""
    conf = root / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "spark.sql.catalogImplementation hive\n"
        f"spark.sql.warehouse.dir {root / 'warehouse'}\n"
        "spark.hadoop.javax.jdo.option.ConnectionURL "
        f"jdbc:derby:;databaseName={root / 'metastore'};create=true\n"
        "spark.ui.enabled false\n"
        "spark.driver.host 127.0.0.1\n"
        "spark.driver.bindAddress 127.0.0.1\n")
    return conf


def run_command(folder: Path, conf: Path, root: Path) -> None:
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    environment = {**os.environ, "SPARK_CONF_DIR": str(conf), "SPARK_HOME": str(spark_home),
                   "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_REMOTE",
                 "PYSPARK_SUBMIT_ARGS"):
        environment.pop(name, None)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "spark-pipelines"), "run", "--spec",
         str(folder / "spark-pipeline.yml")],
        cwd=root, env=environment, capture_output=True, text=True,
        timeout=COMMAND_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"spark-pipelines run failed ({done.returncode}):\n"
                           + done.stdout[-3000:] + done.stderr[-3000:])
