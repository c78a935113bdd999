"""A team's bounded-stream job in its own process: ``spark.readStream`` of a Kafka topic, a
Kinesis stream or a folder of JSON Lines files with Trigger.AvailableNow, into Spark's Parquet
file sink (``files``) or, through ``foreachBatch``, into a Delta or Iceberg table by
streamslice's publishers (``delta``, ``iceberg``), offsets in ``CHECKPOINT``. The chaos tests
start it in a new session and let a fault SIGKILL it (the process, its Spark JVM and Python
workers) in the middle of a batch.

  python -m tests.chaos.stream_query kafka SINK CHECKPOINT OUTPUT MAX_OFFSETS BOOTSTRAP TOPIC
  python -m tests.chaos.stream_query kinesis SINK CHECKPOINT OUTPUT MAX_FETCH ENDPOINT STREAM
  python -m tests.chaos.stream_query files SINK CHECKPOINT OUTPUT MAX_FILES FOLDER
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from streamslice.commit.publishers.tables import TableSettings


def kafka(limit: str, bootstrap: str, topic: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
            "startingOffsets": "earliest", "maxOffsetsPerTrigger": limit}


def kinesis(limit: str, endpoint: str, stream: str) -> dict[str, str]:
    return {"kinesis.streamName": stream, "kinesis.endpointUrl": endpoint,
            "kinesis.region": "us-east-1", "kinesis.awsAccessKeyId": "test",
            "kinesis.awsSecretKey": "test", "kinesis.startingPosition": "TRIM_HORIZON",
            "kinesis.maxFetchRecordsPerShard": limit}


def files(limit: str, folder: str) -> dict[str, str]:
    return {"path": folder, "pattern": "*.jsonl", "valueFormat": "json", "schema": "n long",
            "maxFilesPerTrigger": limit}


SOURCES: dict[str, Callable[..., dict[str, str]]] = {
    "kafka": kafka, "kinesis": kinesis, "files": files}
# What the file sink keeps of each source's rows: a value and where it was read
FILE_SINK_COLUMNS = {"kafka": ("CAST(value AS STRING) AS v", "partition", "offset"),
                     "kinesis": ("CAST(data AS STRING) AS v", "shardId", "sequenceNumber"),
                     "files": ("n", "file", "line")}


def main(kind: str, sink: str, checkpoint: str, output: str, limit: str, *where: str) -> None:
    from streamslice.spark.session import spark_session
    spark = spark_session("local[2]")
    options = SOURCES[kind](limit, *where)
    df = spark.readStream.format(f"streamslice-{kind}").options(**options).load()
    if sink == "files":
        writer = df.selectExpr(*FILE_SINK_COLUMNS[kind]).writeStream.format("parquet") \
            .option("path", output)
    else:
        from streamslice.config.pipeline import Output
        from streamslice.spark.stream_publish import publish_batches
        writer = df.writeStream.foreachBatch(
            publish_batches(kind, options, Output(output, format=sink,
                                                  settings=table_settings(sink, output))))
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()


def table_settings(sink: str, output: str) -> TableSettings:
    """Delta's defaults; an Iceberg table in a SQLite catalog beside it."""
    from streamslice.commit.publishers.delta import DeltaSettings
    from streamslice.commit.publishers.iceberg import IcebergSettings
    if sink == "delta":
        return DeltaSettings()
    return IcebergSettings(catalog=iceberg_catalog(output))


def iceberg_catalog(output: str) -> dict[str, str]:
    return {"type": "sql", "uri": f"sqlite:///{output}/iceberg.db",
            "warehouse": f"file://{output}"}


if __name__ == "__main__":
    main(*sys.argv[1:])
