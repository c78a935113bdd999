"""``make demo``: a local broker, taxi-trip events, Airflow on SQLite and a Spark Connect
server on local[*] (``spark.runner: connect``: no JVM start per run); three hourly intervals
of the taxi_trips pipeline run through Airflow, and the result shown.

Everything lives under .demo/ and output/; a second run reuses the data and gives the same
result (each interval's partition is replaced, never appended to)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk import DAG

    from devtools.services import KafkaBroker, KinesisLocal, SchemaRegistry

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / ".demo"
START_MS = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOURS, PER_HOUR, PARTITIONS = 3, 2000, 6
TOPIC = "taxi-trips"


def connections(kafka: str, kinesis: str, registry_url: str) -> dict[str, dict[str, Any]]:
    """The connections the demo's pipelines name, as ``airflow connections import`` reads
    them. They are stored in the demo's metadata database, so every process with the demo's
    AIRFLOW_HOME (the demo, `make ui`, the streamslice command) resolves them alike."""
    scheme, _, hostport = registry_url.partition("://")
    host, _, port = hostport.rpartition(":")
    return {
        "streamslice_kafka": {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka}},
        "streamslice_schema_registry": {"conn_type": "http", "host": host, "port": int(port),
                                        "schema": scheme},
        # (a secret under 5 characters makes Airflow warn that it cannot mask it)
        "streamslice_aws": {"conn_type": "aws", "login": "demo-key", "password": "demo-secret",
                            "extra": {"region_name": "us-east-1", "endpoint_url": kinesis}}}


def airflow_env(demo: Path = DEMO, root: Path = ROOT) -> dict[str, str]:
    """The demo's Airflow settings: what `make demo` runs with and what it writes to
    ``.demo/env`` for the streamslice command run from the checkout."""
    return {"AIRFLOW_HOME": str(demo / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(root / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING"}


def setup_airflow(conns: dict[str, dict[str, Any]], demo: Path = DEMO,
                  root: Path = ROOT) -> None:
    """The demo's Airflow: its metadata database migrated, the demo's connections stored in
    it, and ``.demo/env`` written (the streamslice command reads it when AIRFLOW_HOME is
    unset, and a shell can source it for `airflow` commands)."""
    import shlex
    settings = airflow_env(demo, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(settings)
    airflow = str(Path(sys.executable).parent / "airflow")
    subprocess.run([airflow, "db", "migrate"], check=True, capture_output=True, env=env)
    (demo / "connections.json").write_text(json.dumps(conns, indent=1))
    subprocess.run([airflow, "connections", "import", "--overwrite",
                    str(demo / "connections.json")], check=True, capture_output=True, env=env)
    (demo / "env").write_text(
        "# The demo's Airflow, written by `make demo`: the streamslice command run from the\n"
        "# checkout uses it when AIRFLOW_HOME is unset; `set -a; . .demo/env; set +a` for a "
        "shell.\n" + "".join(f"{k}={shlex.quote(v)}\n" for k, v in settings.items()))


SERVICES = "services.json"  # the ports the demo's services last used


def service_ports(demo: Path = DEMO) -> dict[str, int]:
    """DEMO_KAFKA_PORT, DEMO_KINESIS_PORT, DEMO_REGISTRY_PORT if set; else the ports the last
    `make demo` used (its stored connections point there); else Kafka's 19092 and free ports."""
    from devtools.services import free_port
    saved = json.loads((demo / SERVICES).read_text()) if (demo / SERVICES).exists() else {}
    ports = {}
    for name, default in (("kafka", 19092), ("kinesis", None), ("registry", None)):
        given = os.environ.get(f"DEMO_{name.upper()}_PORT")
        ports[name] = int(given) if given else saved.get(name) or default or free_port()
    return ports


def start_services(ports: dict[str, int], demo: Path = DEMO
                   ) -> tuple[KafkaBroker, KinesisLocal, SchemaRegistry]:
    """The broker, the Kinesis server and the schema registry on the demo's ports."""
    from devtools.services import KafkaBroker, KinesisLocal, SchemaRegistry
    demo.mkdir(exist_ok=True)
    (demo / SERVICES).write_text(json.dumps(ports))
    started: list[KafkaBroker | KinesisLocal | SchemaRegistry] = []
    try:
        step(f"Kafka-protocol broker on 127.0.0.1:{ports['kafka']} (noida-db, data in "
             ".demo/kafka)")
        broker = KafkaBroker(demo / "kafka", port=ports["kafka"]).start()
        started.append(broker)
        step(f"Kinesis-compatible server (kinesis-local, in memory) behind the EFO proxy on "
             f"127.0.0.1:{ports['kinesis']}")
        kinesis = KinesisLocal(proxy_port=ports["kinesis"], log_file=demo / "kinesis.log").start()
        started.append(kinesis)
        step(f"Confluent-compatible schema registry on 127.0.0.1:{ports['registry']} "
             "(devtools/schema_registry.py, schemas kept in .demo/schema-registry.json)")
        registry = SchemaRegistry(port=ports["registry"], data=demo / "schema-registry.json",
                                  log_file=demo / "schema-registry.log").start()
        started.append(registry)
    except BaseException:
        for service in reversed(started):
            service.stop()
        raise
    return broker, kinesis, registry


def _env(spark_remote: str, demo: Path = DEMO, root: Path = ROOT) -> None:
    os.environ.update({
        **airflow_env(demo, root),
        "SPARK_REMOTE": spark_remote,  # every pipeline reads on the demo's Connect server
        "PYSPARK_PYTHON": sys.executable,
        "STREAMSLICE_HOME": str(root),
        "PYTHONWARNINGS": "ignore",
        "SPARK_LOCAL_IP": "127.0.0.1",
    })
    for key in [k for k in os.environ if k.startswith("AIRFLOW_CONN_")]:
        del os.environ[key]  # the demo's connections are the ones in its database
    import warnings
    warnings.simplefilter("ignore")


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def main() -> None:
    from devtools.services import SparkConnect
    from devtools.spark_cds import QUICK_JVM
    DEMO.mkdir(exist_ok=True)
    broker, kinesis, registry = start_services(service_ports())
    step("Spark Connect server on local[*] (from the pyspark install; read tasks connect to it)")
    # Small demo jobs: a JVM that starts fast matters more than peak throughput.
    spark = SparkConnect(DEMO / "spark-connect", conf={
        "spark.driver.extraJavaOptions": QUICK_JVM})
    try:
        # The Connect server reads Kinesis with its own identity (no secret reaches it): the
        # local server's, as an instance role would be on a real deployment.
        os.environ.update({"AWS_ACCESS_KEY_ID": "demo-key",
                           "AWS_SECRET_ACCESS_KEY": "demo-secret",
                           "AWS_DEFAULT_REGION": "us-east-1"})
        spark.start()
        _env(spark.remote)
        expected = produce_trips(broker.bootstrap)
        step("Airflow metadata database (SQLite, .demo/airflow) with the demo's connections; "
             ".demo/env for the streamslice command")
        setup_airflow(connections(broker.bootstrap, kinesis.endpoint, registry.url))
        run_intervals()
        run_intervals("taxi_trips_iceberg.yaml")
        run_avro(broker.bootstrap, registry)
        kinesis_counts = run_kinesis(kinesis)
        show(expected, kinesis_counts)
        show_iceberg(expected)
        show_avro()
        step("The Streamslice page in the Airflow UI: run `make ui`, then open "
             "http://127.0.0.1:8080/plugin/streamslice")
        step("The streamslice command, from this folder, uses the demo's Airflow (.demo/env); "
             "`make services` starts the broker, Kinesis server and registry again for the "
             "commands that need them")
    finally:
        spark.stop()
        registry.stop()
        kinesis.stop()
        broker.stop()


def serve() -> None:
    """`make services`: the demo's broker, Kinesis server (with an empty 'taxi-trips' stream:
    the server keeps streams in memory) and schema registry, on the ports its connections
    name, until Ctrl-C."""
    import signal
    if not (DEMO / "env").exists():
        sys.exit("no demo yet: run `make demo` first")
    services = start_services(service_ports())
    try:
        ensure_stream(services[1].client())
        stop = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # waited for below, then clean up
        print("\nThe demo's services are up (Ctrl-C stops them).", flush=True)
        signal.sigwait(stop)
    finally:
        for service in reversed(services):
            service.stop()


def produce_trips(bootstrap: str, per_hour: int = PER_HOUR) -> Counter[int]:
    """The taxi trips of the demo's hours in its topic (once: a second demo reuses them);
    returns how many belong to each hour."""
    from devtools.services import create_topic
    from devtools.taxi import produce, trips
    data = trips(START_MS, hours=HOURS, per_hour=per_hour, seed=42)
    if not _topic_has(bootstrap, len(data)):
        step(f"Producing {len(data)} taxi trips over {HOURS} hours into '{TOPIC}' "
             f"({PARTITIONS} partitions, ~5% out of order)")
        create_topic(bootstrap, TOPIC, PARTITIONS)
        produce(bootstrap, TOPIC, data)
    else:
        step(f"Topic '{TOPIC}' already holds the demo's {len(data)} trips")
    return Counter((t.timestamp - START_MS) // 3_600_000 for t in data)


def ensure_stream(client: Any, shards: int = 4) -> None:  # a boto3 Kinesis client
    """The demo's Kinesis stream (empty when the server has just started: it keeps streams
    in memory)."""
    if TOPIC not in client.list_streams()["StreamNames"]:
        client.create_stream(StreamName=TOPIC, ShardCount=shards)
        client.get_waiter("stream_exists").wait(StreamName=TOPIC, WaiterConfig={"Delay": 0.2})


def _topic_has(bootstrap: str, n: int, topic: str = TOPIC) -> bool:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-check"})
    try:
        meta = c.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return False
        total = sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in meta.partitions)
        return bool(total == n)
    finally:
        c.close()


def run_intervals(file: str = "taxi_trips.yaml") -> None:
    from datetime import datetime, timedelta, timezone

    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / file)
    dag = build_dag(cfg)
    for hour in range(HOURS):
        end = datetime.fromtimestamp(START_MS / 1000, tz=timezone.utc) + timedelta(hours=hour + 1)
        run_one(dag, end, f"Airflow run of '{cfg.name}' for [{end - timedelta(hours=1):%H:%M}, "
                          f"{end:%H:%M}) — plan → read (Spark Connect) → commit")


def run_one(dag: DAG, end: datetime, title: str) -> None:
    """One DAG run through Airflow (dag.test) for the interval ending at ``end``."""
    step(title)
    started = time.time()
    run = dag.test(logical_date=end)
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    print(f"   {run.state}  ({time.time() - started:.1f}s)")
    if str(run.state) != "success":
        sys.exit(f"demo run failed: {states}")


AVRO_TOPIC, AVRO_PER_HOUR = "taxi-trips-avro", 1000
AVRO_V1 = {"type": "record", "name": "Trip", "namespace": "demo.taxi", "fields": [
    {"name": "trip_id", "type": "string"},
    {"name": "pickup_zone", "type": "string"},
    {"name": "passenger_count", "type": "int"},
    {"name": "fare_amount", "type": {"type": "bytes", "logicalType": "decimal",
                                     "precision": 9, "scale": 2}},
    {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
# v2 adds a field with a default: records of either version read as either schema.
AVRO_V2 = {**AVRO_V1, "fields": [*AVRO_V1["fields"],
                                 {"name": "tip_amount", "type": ["null", "double"],
                                  "default": None}]}


def produce_avro(bootstrap: str, registry: SchemaRegistry, hour: int,
                 schema: dict[str, Any]) -> None:
    """One hour of trips written by confluent-kafka's AvroSerializer with ``schema``."""
    import random
    from datetime import datetime, timezone
    from decimal import Decimal

    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    ser = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(schema))
    ctx = SerializationContext(AVRO_TOPIC, MessageField.VALUE)
    rng = random.Random(hour)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(AVRO_PER_HOUR):
        ts = START_MS + hour * 3_600_000 + i * 3_600
        trip_id = f"avro-{hour}-{i:05d}"
        trip: dict[str, object] = {"trip_id": trip_id, "pickup_zone": rng.choice(
                    ["Midtown", "JFK Airport", "Harlem", "SoHo"]),
                "passenger_count": rng.randint(1, 4),
                "fare_amount": Decimal(rng.randint(500, 9000)) / 100,
                "event_time": datetime.fromtimestamp(ts / 1000, tz=timezone.utc)}
        if "tip_amount" in [f["name"] for f in schema["fields"]]:
            trip["tip_amount"] = round(rng.uniform(0, 15), 2)
        p.produce(AVRO_TOPIC, key=trip_id.encode(), value=ser(trip, ctx),
                  timestamp=ts)
    p.flush(60)


def run_avro(bootstrap: str, registry: SchemaRegistry) -> None:
    """Schema v1's hour, then v2's: each run reads as the subject's latest version at plan
    time, so hour 0 lands without tip_amount and hour 1 with it (a re-run reads both as v2)."""
    from datetime import datetime, timedelta, timezone

    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips_avro.yaml")
    dag = build_dag(cfg)
    fresh = not _topic_has(bootstrap, 2 * AVRO_PER_HOUR, AVRO_TOPIC)
    if fresh:
        create_avro_topic(bootstrap)
    for hour, (version, schema) in enumerate([("v1", AVRO_V1), ("v2 (adds tip_amount)",
                                                                  AVRO_V2)]):
        if fresh:
            step(f"Producing {AVRO_PER_HOUR} Avro trips for hour {hour} with schema {version} "
                 f"into '{AVRO_TOPIC}' (confluent-kafka's AvroSerializer, the registry)")
            produce_avro(bootstrap, registry, hour, schema)
        end = datetime.fromtimestamp(START_MS / 1000, tz=timezone.utc) + timedelta(hours=hour + 1)
        run_one(dag, end, f"Airflow run of '{cfg.name}' for [{end - timedelta(hours=1):%H:%M}, "
                          f"{end:%H:%M}) — Avro through the schema registry")


def create_avro_topic(bootstrap: str) -> None:
    from devtools.services import create_topic
    create_topic(bootstrap, AVRO_TOPIC, 2)


def show_avro() -> None:
    """Both hours, read back by DuckDB: hour 0 as schema v1 wrote it, hour 1 with v2's field."""
    from devtools.duck import connect
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips_avro.yaml")
    dataset = cfg.output.dataset(cfg.name)
    step(f"Avro topic '{AVRO_TOPIC}' (schema v1, then v2), read back by DuckDB")
    query = ("SELECT interval, count(*) AS records, count(tip_amount) AS with_tip, "
             "round(avg(fare_amount), 2) AS avg_fare FROM read_parquet("
             f"'{dataset}/*/*.parquet', union_by_name = true, hive_partitioning = true) "
             "GROUP BY 1 ORDER BY 1")
    print(f"   {query.replace(dataset, os.path.relpath(dataset, ROOT))}")
    for interval, records, with_tip, fare in connect().sql(query).fetchall():
        ok = "ok" if records == AVRO_PER_HOUR else "MISMATCH"
        print(f"   {interval:<22}{records:>9}{with_tip:>10}{fare:>10}  {ok}")


KINESIS_WAVES, KINESIS_WAVE, KINESIS_WIDTH = 3, 1200, 10


KinesisCount = tuple[datetime, int, int, set[str]]  # interval start, records, dead letters, readers


def run_kinesis(kinesis: KinesisLocal) -> list[KinesisCount]:
    """Kinesis intervals are by arrival time: produce one wave of trips early in each of three
    10-second intervals, then run the EFO pipeline for each interval through Airflow."""
    import shutil
    from datetime import datetime, timedelta, timezone

    from devtools.taxi import trips
    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips_kinesis.yaml")
    shutil.rmtree(cfg.output.dataset(cfg.name), ignore_errors=True)  # a fresh stream each time
    client = kinesis.client()
    ensure_stream(client)
    step(f"Producing {KINESIS_WAVES} waves of {KINESIS_WAVE} taxi trips into Kinesis stream "
         f"'taxi-trips' (4 shards), one per {KINESIS_WIDTH}-second interval")
    w = KINESIS_WIDTH
    first = (int(time.time()) // w + 1) * w
    for k in range(KINESIS_WAVES):
        time.sleep(max(0.0, first + k * w + 0.5 - time.time()))
        wave = trips(START_MS, 1, KINESIS_WAVE, seed=100 + k)
        for lo in range(0, len(wave), 500):
            client.put_records(StreamName="taxi-trips", Records=[
                {"Data": t.value, "PartitionKey": t.key.decode()} for t in wave[lo:lo + 500]])
    time.sleep(max(0.0, first + KINESIS_WAVES * w + 0.2 - time.time()))
    dag = build_dag(cfg)
    counts = []
    for k in range(KINESIS_WAVES):
        end = datetime.fromtimestamp(first + (k + 1) * w, tz=timezone.utc)
        run_one(dag, end, f"Airflow run of '{cfg.name}' for [{end - timedelta(seconds=w):%H:%M:%S}"
                          f", {end:%H:%M:%S}) — efo_register → plan → read (EFO) → commit → "
                          "efo_deregister")
        begin = (end - timedelta(seconds=w)).strftime("%Y%m%dT%H%M%SZ")
        m = manifest(cfg.output.dataset(cfg.name), f"interval={begin}")
        counts.append((end - timedelta(seconds=w), m["records"], m["dead_letters"],
                       {s["reader"] for s in m["splits"]}))
    return counts


def manifest(dataset: str, partition: str) -> dict[str, Any]:
    """The commit's manifest of ``partition``: the demo stops if a run it made left none."""
    from streamslice.commit.manifest import read_manifest
    m = read_manifest(dataset, partition)
    if m is None:
        sys.exit(f"demo run left no manifest in {dataset}/{partition}")
    return m


def show(expected: Counter[int], kinesis_counts: list[KinesisCount]) -> None:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips.yaml")
    dataset = cfg.output.dataset(cfg.name)
    step(f"Result in {os.path.relpath(dataset, ROOT)}/")
    print(f"   {'interval (UTC)':<22}{'records':>9}{'expected':>10}{'late':>6}{'dlq':>5}"
          f"{'passengers':>12}{'avg fare':>10}")
    total = 0
    for hour in range(HOURS):
        part = f"interval=20240501T{hour:02d}0000Z"
        m = manifest(dataset, part)
        t = ds.dataset(f"{dataset}/{part}", format="parquet").to_table()
        ok = "ok" if m["records"] == expected[hour] == t.num_rows else "MISMATCH"
        total += t.num_rows
        print(f"   2024-05-01 {hour:02d}:00-{hour + 1:02d}:00 {m['records']:>9}"
              f"{expected[hour]:>10}{m['late_records']:>6}{m['dead_letters']:>5}"
              f"{pc.sum(t['passenger_count']).as_py():>12}"
              f"{pc.mean(t['fare_amount']).as_py():>10.2f}  {ok}")
    cp = OfflineCheckpointStore(f"streamslice/{cfg.name}").get()
    if cp is None:
        sys.exit(f"the demo's runs left no checkpoint for {cfg.name}")
    print(f"   total {total} records, each exactly once; checkpoint (asset state): "
          f"interval_end={cp.interval_end}, {len(cp.positions)} partitions")
    step("Kinesis result (by arrival time, read over Enhanced Fan-Out)")
    print(f"   {'interval (UTC)':<22}{'records':>9}{'expected':>10}{'dlq':>5}  reader")
    for begin, records, dead, readers in kinesis_counts:
        ok = "ok" if records == KINESIS_WAVE else "MISMATCH"
        print(f"   {begin:%H:%M:%S}+{KINESIS_WIDTH}s{'':<10}{records:>9}{KINESIS_WAVE:>10}"
              f"{dead:>5}  {','.join(sorted(readers))}  {ok}")
    print("\n   Explore: .venv/bin/streamslice --help")


def show_iceberg(expected: Counter[int]) -> None:
    """The Iceberg table, read by DuckDB (its iceberg extension, from PyPI)."""
    from pyiceberg.catalog import load_catalog

    from devtools.duck import connect
    from streamslice.config import load_pipeline
    cfg = load_pipeline(ROOT / "dags" / "pipelines" / "taxi_trips_iceberg.yaml")
    target = cfg.output.target(cfg.name)
    assert target.table, "an iceberg output always names its table"
    table = load_catalog("streamslice", **target.catalog).load_table(target.table)
    step(f"Iceberg table {target.table}: {len(table.snapshots())} snapshots; DuckDB reads it")
    query = (f"SELECT streamslice_partition, count(*) AS records, "
             f"round(avg(fare_amount), 2) AS avg_fare FROM iceberg_scan("
             f"'{table.metadata_location}') GROUP BY 1 ORDER BY 1")
    print(f"   {query.replace(table.metadata_location, '…/metadata.json')}")
    for part, records, fare in connect().sql(query).fetchall():
        hour = int(part[18:20])
        ok = "ok" if records == expected[hour] else "MISMATCH"
        print(f"   {part:<28}{records:>9}{fare:>10}  {ok}")


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["--services"] else main()
