"""One SparkSession per process, set up so Python workers import this package."""
import json
import os
import sys

import streamslice

PLUGINS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(streamslice.__file__)))
# Session settings every read job runs with (in-process, spark-submit and Spark Connect).
SQL_CONF = {"spark.sql.session.timeZone": "UTC",
            "spark.sql.maxConcurrentOutputFileWriters": "4",
            # INT64 microseconds, which every reader and table format takes (not INT96)
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


def launched_by_spark_submit():
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(master="local[*]", conf=None, app_name="streamslice"):
    """Get or create the session. Extra Spark properties may also come from the environment
    as JSON in ``STREAMSLICE_SPARK_CONF`` (tests use it for quick JVM start-up flags). Under
    spark-submit the master and settings given to spark-submit win."""
    from pyspark.sql import SparkSession

    from .datasource import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if PLUGINS_DIR not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([PLUGINS_DIR, *paths])
    if launched_by_spark_submit():
        master = None
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in SQL_CONF.items():
        builder = builder.config(key, value)
    if master:  # under spark-submit, --py-files ships the package to the executors
        builder = builder.config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    if master and master.startswith("local"):  # a local job needs no address beyond loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1") \
            .config("spark.driver.host", "127.0.0.1")
    settings = dict(json.loads(os.environ.get("STREAMSLICE_SPARK_CONF") or "{}"))
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("STREAMSLICE_SPARK_LOG_LEVEL", "ERROR"))
    register(spark)
    return spark
