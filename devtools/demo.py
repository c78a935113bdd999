"""``make demo``: a local broker, taxi-trip events, Airflow on SQLite and Spark on local[*];
three hourly intervals of the taxi_trips pipeline run through Airflow, and the result shown.

Everything lives under .demo/ and output/; a second run reuses the data and gives the same
result (each interval's partition is replaced, never appended to)."""
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / ".demo"
START_MS = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOURS, PER_HOUR, PARTITIONS = 3, 2000, 6
TOPIC = "taxi-trips"


def _env(kafka):
    os.environ.update({
        "AIRFLOW_HOME": str(DEMO / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW_CONN_STREAMSLICE_KAFKA": json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka}}),
        "PYSPARK_PYTHON": sys.executable,
        "STREAMSLICE_HOME": str(ROOT),
        "PYTHONWARNINGS": "ignore",
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Small demo jobs: a JVM that starts fast matters more than peak throughput.
        "STREAMSLICE_SPARK_CONF": json.dumps({
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}),
    })
    import warnings
    warnings.simplefilter("ignore")


def step(text):
    print(f"\n== {text}", flush=True)


def main():
    from devtools.services import KafkaBroker, create_topic
    from devtools.taxi import produce, trips
    DEMO.mkdir(exist_ok=True)
    port = int(os.environ.get("DEMO_KAFKA_PORT", "19092"))
    step(f"Kafka-protocol broker on 127.0.0.1:{port} (noida-db, data in .demo/kafka)")
    broker = KafkaBroker(DEMO / "kafka", port=port).start()
    try:
        _env(broker.bootstrap)
        data = trips(START_MS, hours=HOURS, per_hour=PER_HOUR, seed=42)
        expected = Counter((t.timestamp - START_MS) // 3_600_000 for t in data)
        if not _topic_has(broker.bootstrap, len(data)):
            step(f"Producing {len(data)} taxi trips over {HOURS} hours into '{TOPIC}' "
                 f"({PARTITIONS} partitions, ~5% out of order)")
            create_topic(broker.bootstrap, TOPIC, PARTITIONS)
            produce(broker.bootstrap, TOPIC, data)
        else:
            step(f"Topic '{TOPIC}' already holds the demo's {len(data)} trips")
        step("Airflow metadata database (SQLite, .demo/airflow)")
        subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                       check=True, capture_output=True)
        run_intervals()
        show(expected)
    finally:
        broker.stop()


def _topic_has(bootstrap, n):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-check"})
    try:
        meta = c.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
        if meta is None or meta.error is not None:
            return False
        total = sum(c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
                    for p in meta.partitions)
        return total == n
    finally:
        c.close()


def run_intervals():
    from datetime import datetime, timedelta, timezone

    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips.yaml")
    dag = build_dag(cfg)
    for hour in range(HOURS):
        end = datetime.fromtimestamp(START_MS / 1000, tz=timezone.utc) + timedelta(hours=hour + 1)
        step(f"Airflow run of '{cfg.name}' for [{end - timedelta(hours=1):%H:%M}, "
             f"{end:%H:%M}) — plan → read (Spark local[*]) → commit")
        started = time.time()
        run = dag.test(logical_date=end)
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        print(f"   {run.state}  {states}  ({time.time() - started:.1f}s)")
        if str(run.state) != "success":
            sys.exit(f"demo run failed: {states}")


def show(expected):
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from streamslice.airflow.store import OfflineCheckpointStore
    from streamslice.commit import read_manifest
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips.yaml")
    dataset = cfg.output.dataset(cfg.name)
    step(f"Result in {os.path.relpath(dataset, ROOT)}/")
    print(f"   {'interval (UTC)':<22}{'records':>9}{'expected':>10}{'late':>6}{'dlq':>5}"
          f"{'passengers':>12}{'avg fare':>10}")
    total = 0
    for hour in range(HOURS):
        part = f"interval=20240501T{hour:02d}0000Z"
        m = read_manifest(dataset, part)
        t = ds.dataset(f"{dataset}/{part}", format="parquet").to_table()
        ok = "ok" if m["records"] == expected[hour] == t.num_rows else "MISMATCH"
        total += t.num_rows
        print(f"   2024-05-01 {hour:02d}:00-{hour + 1:02d}:00 {m['records']:>9}"
              f"{expected[hour]:>10}{m['late_records']:>6}{m['dead_letters']:>5}"
              f"{pc.sum(t['passenger_count']).as_py():>12}"
              f"{pc.mean(t['fare_amount']).as_py():>10.2f}  {ok}")
    cp = OfflineCheckpointStore(f"streamslice/{cfg.name}").get()
    print(f"   total {total} records, each exactly once; checkpoint (asset state): "
          f"interval_end={cp.interval_end}, {len(cp.positions)} partitions")
    print("\n   Explore: .venv/bin/streamslice --help · AIRFLOW_HOME=.demo/airflow "
          ".venv/bin/airflow standalone")


if __name__ == "__main__":
    main()
