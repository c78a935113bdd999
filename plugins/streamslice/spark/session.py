"""One SparkSession per process, set up so Python workers import this package."""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from .package import PACKAGE_ROOT, installed

# Session settings every read job runs with (in-process, spark-submit and Spark Connect).
SQL_CONF = {"spark.sql.session.timeZone": "UTC",
            "spark.sql.maxConcurrentOutputFileWriters": "4",
            # INT64 microseconds, which every reader and table format takes (not INT96)
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


def launched_by_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(master: str | None = "local[*]", conf: dict[str, Any] | None = None,
                  app_name: str = "streamslice") -> Any:
    """Get or create the session. Extra Spark properties may also come from the environment
    as JSON in ``STREAMSLICE_SPARK_CONF`` (tests use it for quick JVM start-up flags). Under
    spark-submit the master and settings given to spark-submit win."""
    from pyspark.sql import SparkSession

    from .datasource import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    # Python workers of a local session run this interpreter: an installed package is on
    # their path already (and site-packages must not go ahead of the standard library); a
    # checkout's plugins/ is not.
    if not installed() and str(PACKAGE_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *paths])
    if launched_by_spark_submit():
        master = None
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in SQL_CONF.items():
        builder = builder.config(key, value)
    if master and os.environ.get("PYTHONPATH"):  # under spark-submit, --py-files ships it
        builder = builder.config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    if master and master.startswith("local"):  # a local job needs no address beyond loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1") \
            .config("spark.driver.host", "127.0.0.1")
    settings = dict(json.loads(os.environ.get("STREAMSLICE_SPARK_CONF") or "{}"))
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    forget_dead_jvm()
    spark = builder.getOrCreate()
    _quiet_accumulator_server(spark.sparkContext)
    spark.sparkContext.setLogLevel(os.environ.get("STREAMSLICE_SPARK_LOG_LEVEL", "ERROR"))
    register(spark)
    return spark


def _quiet_accumulator_server(context: Any) -> None:
    """PySpark's accumulator server prints an EOFError traceback when the JVM dies; the read
    already fails with one clear line for that (``job.unwrap``)."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None


def forget_dead_jvm() -> bool:
    """Drop PySpark's cached context and session when their JVM has exited (killed, out of
    memory). Without this a long-lived process (``dag.test``, ``airflow dags test``) gets the
    dead session back from ``getOrCreate`` and every later try fails on the closed socket."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None or proc.poll() is None:
        return False
    context = SparkContext._active_spark_context
    if context is not None and getattr(context, "_accumulatorServer", None):
        context._accumulatorServer.shutdown()
        context._accumulatorServer = None  # type: ignore[assignment]
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM end is already gone
        pass
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None
    return True
