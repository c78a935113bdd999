"""An example of a team's own bounded-stream job on Kinesis run by Airflow: a
``spark.readStream`` query written for the AWS Kinesis connector for Spark's options, with
Trigger.AvailableNow, that reads what the stream holds since its last run (from TRIM_HORIZON
the first time, at most ``maxFetchRecordsPerShard`` records of a shard a batch), appends it
to a Parquet dataset and stops. Its shard positions are in the query's checkpoint location,
which must be on storage every worker sees (a shared file system, or ``s3://`` where Spark
has an S3 file system): a run killed in the middle of a batch is finished exactly by the
next one. See docs/streaming.md.

Where the query runs:

- ``STREAM_EXAMPLE_REMOTE`` set (``sc://spark-connect:15002``): on that Spark Connect server,
  with the package and the data sources shipped there (``spark.connect.connect_session``);
  the stream's credentials, the checkpoint and the output paths are then the server's.
- unset: in the task's own process on ``local[*]``.
- on a cluster: ``spark-submit dags/kinesis_stream_example.py STREAM REGION CHECKPOINT
  OUTPUT`` (with streamslice installed where Spark runs; the other settings from the
  environment, as below).

The settings come from the environment (``KINESIS_EXAMPLE_*``), so the DAG is paused and
unscheduled until someone sets them and unpauses it. ``KINESIS_EXAMPLE_CONSUMER_TYPE``
``SubscribeToShard`` reads over Enhanced Fan-Out with the consumer
``KINESIS_EXAMPLE_CONSUMER_NAME``, registered when the query starts and deregistered when it
stops. AWS credentials come from the default chain where the query runs.
"""
from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow.sdk import dag, task

if TYPE_CHECKING:
    from collections.abc import Mapping

STREAM = os.environ.get("KINESIS_EXAMPLE_STREAM", "taxi-trips")
REGION = os.environ.get("KINESIS_EXAMPLE_REGION", "us-east-1")
ENDPOINT = os.environ.get("KINESIS_EXAMPLE_ENDPOINT") or None
CONSUMER_TYPE = os.environ.get("KINESIS_EXAMPLE_CONSUMER_TYPE", "GetRecords")
CONSUMER_NAME = os.environ.get("KINESIS_EXAMPLE_CONSUMER_NAME") or None
CHECKPOINT = os.environ.get("KINESIS_EXAMPLE_CHECKPOINT",
                            "/shared/streams/taxi-trips-kinesis/_checkpoint")
OUTPUT = os.environ.get("KINESIS_EXAMPLE_OUTPUT", "/shared/streams/taxi-trips-kinesis/data")
REMOTE = os.environ.get("STREAM_EXAMPLE_REMOTE") or None


def available_now(stream: str, region: str, checkpoint: str, output: str, *,
                  endpoint: str | None = ENDPOINT, max_fetch: str = "100000",
                  consumer_type: str = CONSUMER_TYPE, consumer_name: str | None = CONSUMER_NAME,
                  remote: str | None = None,
                  options: Mapping[str, str] | None = None) -> dict[str, int]:
    """The team's query, unchanged but for the format name; ``options`` are any more of the
    connector's (``kinesis.awsAccessKeyId``, ...). Returns the rows read per batch, for the
    task's log and XCom."""
    from streamslice.spark.connect import stream_session
    more = {"kinesis.endpointUrl": endpoint, "kinesis.consumerName": consumer_name,
            **(options or {})}
    with stream_session(remote) as spark:
        return _query(spark, stream, region, checkpoint, output, max_fetch, consumer_type,
                      {k: v for k, v in more.items() if v})


def _query(spark: Any, stream: str, region: str, checkpoint: str, output: str,
           max_fetch: str, consumer_type: str, options: dict[str, str]) -> dict[str, int]:
    from streamslice.spark.connect import rows_per_batch
    df = (spark.readStream.format("streamslice-kinesis")
          .option("kinesis.streamName", stream).option("kinesis.region", region)
          .option("kinesis.startingPosition", "TRIM_HORIZON")
          .option("kinesis.maxFetchRecordsPerShard", max_fetch)
          .option("kinesis.consumerType", consumer_type).options(**options)
          .load())
    query = (df.selectExpr("CAST(data AS STRING) AS data", "partitionKey", "shardId",
                           "sequenceNumber", "approximateArrivalTimestamp")
             .writeStream.format("parquet").option("path", output)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return rows_per_batch(query)


@dag(schedule=None, start_date=datetime(2024, 5, 1), catchup=False, is_paused_upon_creation=True,
     max_active_runs=1,
     tags=["streamslice", "example"], doc_md=__doc__)
def kinesis_stream_example() -> None:
    @task
    def read_available_now() -> dict[str, int]:
        return available_now(STREAM, REGION, CHECKPOINT, OUTPUT, remote=REMOTE)

    read_available_now()


kinesis_stream_example()

if __name__ == "__main__":  # spark-submit dags/kinesis_stream_example.py STREAM REGION ...
    available_now(*sys.argv[1:5])
