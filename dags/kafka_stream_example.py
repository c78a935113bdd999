"""An example of a team's own bounded-stream job run by Airflow: a ``spark.readStream`` query
with Trigger.AvailableNow that reads what the topic holds since its last run (in batches of
at most ``maxOffsetsPerTrigger``), appends it to a Parquet dataset and stops. Its offsets are
in the query's checkpoint location, which must be on storage every worker sees (a shared
file system, or ``s3://`` where Spark has an S3 file system): a run killed in the middle of a
batch is finished exactly by the next one. See docs/streaming.md.

Where the query runs:

- ``STREAM_EXAMPLE_REMOTE`` set (``sc://spark-connect:15002``): on that Spark Connect server.
  The task ships the streamslice package to the server and registers the data sources there
  (``spark.connect.connect_session``); the query is the same code, and the checkpoint and
  output paths are the server's (shared storage the server's executors see).
- unset: in the task's own process on ``local[*]``.
- on a cluster: ``spark-submit dags/kafka_stream_example.py BOOTSTRAP TOPIC CHECKPOINT
  OUTPUT`` (with streamslice installed where Spark runs).

The settings come from the environment, so the DAG is paused and unscheduled until someone
sets them and unpauses it.
"""
from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import Any

from airflow.sdk import dag, task

BOOTSTRAP = os.environ.get("STREAM_EXAMPLE_BOOTSTRAP", "127.0.0.1:9092")
TOPIC = os.environ.get("STREAM_EXAMPLE_TOPIC", "taxi-trips")
CHECKPOINT = os.environ.get("STREAM_EXAMPLE_CHECKPOINT", "/shared/streams/taxi-trips/_checkpoint")
OUTPUT = os.environ.get("STREAM_EXAMPLE_OUTPUT", "/shared/streams/taxi-trips/data")
REMOTE = os.environ.get("STREAM_EXAMPLE_REMOTE") or None


def available_now(bootstrap: str, topic: str, checkpoint: str, output: str,
                  max_offsets: str = "100000", remote: str | None = None) -> dict[str, int]:
    """The team's query, unchanged but for the format name; returns the rows read per
    batch, for the task's log and XCom."""
    from streamslice.spark.connect import stream_session
    with stream_session(remote) as spark:
        return _query(spark, bootstrap, topic, checkpoint, output, max_offsets)


def _query(spark: Any, bootstrap: str, topic: str, checkpoint: str, output: str,
           max_offsets: str) -> dict[str, int]:
    df = (spark.readStream.format("streamslice-kafka")
          .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", max_offsets)
          .load())
    query = (df.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value",
                           "partition", "offset", "timestamp")
             .writeStream.format("parquet").option("path", output)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    from streamslice.spark.connect import rows_per_batch
    return rows_per_batch(query)


@dag(schedule=None, start_date=datetime(2024, 5, 1), catchup=False, is_paused_upon_creation=True,
     max_active_runs=1,
     tags=["streamslice", "example"], doc_md=__doc__)
def kafka_stream_example() -> None:
    @task
    def read_available_now() -> dict[str, int]:
        return available_now(BOOTSTRAP, TOPIC, CHECKPOINT, OUTPUT, remote=REMOTE)

    read_available_now()


kafka_stream_example()

if __name__ == "__main__":  # spark-submit dags/kafka_stream_example.py BOOTSTRAP TOPIC ...
    available_now(*sys.argv[1:5])
