"""A team's bounded-stream job in its own process: ``spark.readStream`` of a Kafka topic with
Trigger.AvailableNow into Spark's Parquet file sink, offsets in ``CHECKPOINT``. The chaos
tests start it in a new session and let a fault SIGKILL it (the process, its Spark JVM and
Python workers) in the middle of a batch.

  python -m tests.chaos.stream_query BOOTSTRAP TOPIC CHECKPOINT OUTPUT MAX_OFFSETS_PER_TRIGGER
"""
import sys


def main(bootstrap, topic, checkpoint, output, max_offsets):
    from streamslice.spark.session import spark_session
    spark = spark_session("local[2]")
    df = spark.readStream.format("streamslice-kafka") \
        .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", max_offsets) \
        .load()
    query = df.selectExpr("CAST(value AS STRING) AS v", "partition", "offset") \
        .writeStream.format("parquet").option("path", output) \
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
