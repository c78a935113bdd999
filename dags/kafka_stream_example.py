"""An example of a team's own bounded-stream job run by Airflow: a ``spark.readStream`` query
with Trigger.AvailableNow that reads what the topic holds since its last run (in batches of
at most ``maxOffsetsPerTrigger``), appends it to a Parquet dataset and stops. Its offsets are
in the query's checkpoint location, which must be on storage every worker sees (a shared
file system, or ``s3://`` where Spark has an S3 file system): a run killed in the middle of a
batch is finished exactly by the next one. See docs/streaming.md.

The task runs the query in its own process on ``local[*]``; the same file runs on a cluster
with ``spark-submit dags/kafka_stream_example.py BOOTSTRAP TOPIC CHECKPOINT OUTPUT`` (with
streamslice installed where Spark runs). The settings come from the environment, so the DAG
is paused and unscheduled until someone sets them and unpauses it.
"""
from __future__ import annotations

import os
import sys
from datetime import datetime

from airflow.sdk import dag, task

BOOTSTRAP = os.environ.get("STREAM_EXAMPLE_BOOTSTRAP", "127.0.0.1:9092")
TOPIC = os.environ.get("STREAM_EXAMPLE_TOPIC", "taxi-trips")
CHECKPOINT = os.environ.get("STREAM_EXAMPLE_CHECKPOINT", "/shared/streams/taxi-trips/_checkpoint")
OUTPUT = os.environ.get("STREAM_EXAMPLE_OUTPUT", "/shared/streams/taxi-trips/data")


def available_now(bootstrap: str, topic: str, checkpoint: str, output: str,
                  max_offsets: str = "100000") -> dict[str, int]:
    """The team's query, unchanged but for the format name; returns the rows read per
    batch, for the task's log and XCom."""
    from streamslice.spark.session import spark_session
    spark = spark_session()
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
    return {str(p["batchId"]): int(p["numInputRows"]) for p in query.recentProgress}


@dag(schedule=None, start_date=datetime(2024, 5, 1), catchup=False, is_paused_upon_creation=True,
     tags=["streamslice", "example"], doc_md=__doc__)
def kafka_stream_example() -> None:
    @task
    def read_available_now() -> dict[str, int]:
        return available_now(BOOTSTRAP, TOPIC, CHECKPOINT, OUTPUT)

    read_available_now()


kafka_stream_example()

if __name__ == "__main__":  # spark-submit dags/kafka_stream_example.py BOOTSTRAP TOPIC ...
    available_now(*sys.argv[1:5])
