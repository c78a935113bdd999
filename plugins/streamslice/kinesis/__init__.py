"""Kinesis Data Streams: planner, polling and Enhanced Fan-Out readers, consumer registration
(no Airflow/Spark imports)."""
