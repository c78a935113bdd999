"""Kafka: subscribers, offset initializers, planner and readers (no Airflow/Spark imports)."""
