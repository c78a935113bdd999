"""A team's bounded-stream job in its own process: ``spark.readStream`` of a Kafka topic with
Trigger.AvailableNow into Spark's Parquet file sink (``files``) or, through ``foreachBatch``,
into a Delta table by streamslice's publisher (``delta``), offsets in ``CHECKPOINT``. The
chaos tests start it in a new session and let a fault SIGKILL it (the process, its Spark JVM
and Python workers) in the middle of a batch.

  python -m tests.chaos.stream_query BOOTSTRAP TOPIC CHECKPOINT OUTPUT MAX_OFFSETS SINK

The same over a folder of JSON Lines files (``streamslice-files``, ``maxFilesPerTrigger``)
into the file sink,

  python -m tests.chaos.stream_query files FOLDER CHECKPOINT OUTPUT MAX_FILES

and a Kinesis stream (``maxFetchRecordsPerShard`` MAX_FETCH) into the file sink:

  python -m tests.chaos.stream_query kinesis ENDPOINT STREAM CHECKPOINT OUTPUT MAX_FETCH
"""
import sys


def main(bootstrap, topic, checkpoint, output, max_offsets, sink="files"):
    from streamslice.spark.session import spark_session
    spark = spark_session("local[2]")
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
               "startingOffsets": "earliest", "maxOffsetsPerTrigger": max_offsets}
    df = spark.readStream.format("streamslice-kafka").options(**options).load()
    if sink == "files":
        writer = df.selectExpr("CAST(value AS STRING) AS v", "partition", "offset") \
            .writeStream.format("parquet").option("path", output)
    else:
        from streamslice.config.pipeline import Output
        from streamslice.spark.stream_publish import publish_batches
        writer = df.writeStream.foreachBatch(
            publish_batches("kafka", options, Output(output, format=sink,
                                                     settings=table_settings(sink, output))))
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()


def files_main(folder, checkpoint, output, max_files):
    from streamslice.spark.session import spark_session
    spark = spark_session("local[2]")
    df = spark.readStream.format("streamslice-files").option("pattern", "*.jsonl") \
        .option("valueFormat", "json").option("schema", "n long") \
        .option("maxFilesPerTrigger", max_files).load(folder)
    query = df.select("n", "file", "line").writeStream.format("parquet") \
        .option("path", output).option("checkpointLocation", checkpoint) \
        .trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()


def kinesis_main(endpoint, stream, checkpoint, output, max_fetch):
    from streamslice.spark.session import spark_session
    spark = spark_session("local[2]")
    options = {"kinesis.streamName": stream, "kinesis.endpointUrl": endpoint,
               "kinesis.region": "us-east-1", "kinesis.awsAccessKeyId": "test",
               "kinesis.awsSecretKey": "test", "kinesis.startingPosition": "TRIM_HORIZON",
               "kinesis.maxFetchRecordsPerShard": max_fetch}
    df = spark.readStream.format("streamslice-kinesis").options(**options).load()
    query = (df.selectExpr("CAST(data AS STRING) AS v", "shardId", "sequenceNumber")
             .writeStream.format("parquet").option("path", output)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    spark.stop()


def table_settings(sink, output):
    """Delta's defaults; an Iceberg table in a SQLite catalog beside it."""
    from streamslice.commit.publishers.delta import DeltaSettings
    from streamslice.commit.publishers.iceberg import IcebergSettings
    if sink == "delta":
        return DeltaSettings()
    return IcebergSettings(catalog=iceberg_catalog(output))


def iceberg_catalog(output):
    return {"type": "sql", "uri": f"sqlite:///{output}/iceberg.db",
            "warehouse": f"file://{output}"}


if __name__ == "__main__":
    if sys.argv[1] == "files":
        files_main(*sys.argv[2:])
    elif sys.argv[1] == "kinesis":
        kinesis_main(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
