"""Avro through a schema registry, end to end: a real broker, the local Confluent Schema
Registry in its own process (basic auth, credentials from an Airflow connection), records
written by confluent-kafka's AvroSerializer, Airflow runs through dag.test() and Spark.
Schema v1, then v2 with an added field: each run reads as the latest version at plan time,
recorded in its plan; bad records are dead letters with their reasons; DuckDB reads both."""
import json
import os

import pyarrow.parquet as pq
import pytest

from devtools.services import SchemaRegistry, create_topic
from tests.support.checks import present
from tests.support.connections import connection
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = pytest.mark.integration

V1 = {"type": "record", "name": "Trip", "namespace": "demo", "fields": [
    {"name": "trip_id", "type": "string"},
    {"name": "fare", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8,
                              "scale": 2}},
    {"name": "pickup", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "tip", "type": ["null", "double"],
                                       "default": None}]}


@pytest.fixture(scope="module")
def registry():
    with SchemaRegistry(user="reader:s3cret") as sr, pytest.MonkeyPatch.context() as mp:
        connection(mp, "test_schema_registry", "http", host="127.0.0.1", port=sr.port,
                   schema="http", login="reader", password="s3cret")
        yield sr


def produce(bootstrap, topic, sr, schema, records, extra=()):
    from decimal import Decimal

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient({"url": sr.url, "basic.auth.user.info": "reader:s3cret"})
    ser = AvroSerializer(client, json.dumps(schema))
    with producer(bootstrap) as p:
        for r in records:
            value = ser({**r, "fare": Decimal(r["fare"])},
                        SerializationContext(topic, MessageField.VALUE))
            p.produce(topic, key=r["trip_id"].encode(), value=value, partition=0)
        for value in extra:
            p.produce(topic, value=value, partition=0)


def pipeline(broker, topic, tmp_path, **fmt):
    """An incremental pipeline reading ``topic``'s values as Avro through the registry."""
    return kafka_pipeline(broker.bootstrap, topic, retries=0, output=f"{tmp_path}/lake",
                          format={"value": "avro", "registry": {"conn_id": "test_schema_registry"},
                                  "subject": f"{topic}-value", **fmt})


def test_avro_v1_then_v2_through_the_registry(broker, spark, airflow_db, registry, tmp_path):
    from datetime import datetime, timezone
    topic = unique("avro")
    create_topic(broker.bootstrap, topic, 1)
    at = datetime(2024, 5, 1, 1, 2, 3, 456000, tzinfo=timezone.utc)
    produce(broker.bootstrap, topic, registry, V1,
            [{"trip_id": f"a{i}", "fare": f"{i}.25", "pickup": at} for i in range(5)])
    cfg = pipeline(broker, topic, tmp_path, key="string")
    run_dag(cfg)
    produce(broker.bootstrap, topic, registry, V2,
            [{"trip_id": f"b{i}", "fare": "1.50", "pickup": at, "tip": i / 2}
             for i in range(3)],
            extra=[b'{"trip_id": "json"}', b"\x00\x00\x00\x03\xe7\x02", b"\x00\x00\x00"])
    produce(broker.bootstrap, topic, registry, V1,
            [{"trip_id": "late-v1", "fare": "2.00", "pickup": at}])
    run = run_dag(cfg)

    dataset = cfg.output.dataset(cfg.name)
    one = pq.read_table(f"{dataset}/batch=00000001")
    two = pq.read_table(f"{dataset}/batch=00000002")
    assert "tip" not in one.column_names and "tip" in two.column_names
    assert str(one.schema.field("fare").type) == "decimal128(8, 2)"
    assert str(one.schema.field("pickup").type) == "timestamp[us, tz=UTC]"
    rows = sorted(two.select(["trip_id", "tip"]).to_pylist(), key=lambda r: r["trip_id"])
    assert rows == [{"trip_id": "b0", "tip": 0.0}, {"trip_id": "b1", "tip": 0.5},
                    {"trip_id": "b2", "tip": 1.0}, {"trip_id": "late-v1", "tip": None}]
    assert one.column("pickup").to_pylist()[0] == at

    plan = run.get_task_instance("plan").xcom_pull(task_ids="plan")
    reader = plan["decode"]["value"]["options"]["reader"]
    assert (reader["subject"], reader["version"]) == (f"{topic}-value", 2)
    assert "s3cret" not in json.dumps(plan)  # the plan never holds the credentials

    from streamslice.commit.manifest import read_manifest
    dead = pq.read_table(present(read_manifest(dataset, "batch=00000002"))["dead_letter_uri"])
    reasons = sorted(dead.column("error").to_pylist())
    assert reasons[0].startswith("schema id 999 is not in the Confluent Schema Registry at")
    assert "truncated Confluent frame: 3 bytes" in reasons[1]
    assert reasons[2].startswith("unknown magic byte 0x7b")

    from devtools.duck import connect
    got = connect().sql(f"SELECT count(*), count(tip) FROM read_parquet('{dataset}/*/*.parquet'"
                        ", union_by_name=true)").fetchone()
    assert got == (9, 3)


def test_spark_options_read_avro_through_the_registry(broker, spark, registry):
    """``format("streamslice-kafka")`` with valueFormat avro and schema.registry.* options."""
    from datetime import datetime, timezone
    topic = unique("avro-spark")
    create_topic(broker.bootstrap, topic, 2)
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    produce(broker.bootstrap, topic, registry, V2,
            [{"trip_id": f"s{i}", "fare": "3.10", "pickup": at, "tip": 0.5} for i in range(4)],
            extra=[b"\x00\x00\x00"])
    reader = (spark.read.format("streamslice-kafka")
              .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
              .option("valueFormat", "avro").option("keyFormat", "string")
              .option("onDecodeError", "dead_letter")
              .option("schema.registry.url", registry.url)
              .option("schema.registry.basic.auth.user.info", "reader:s3cret")
              .option("subject", f"{topic}-value"))
    df = reader.load()
    assert df.columns[:5] == ["key", "trip_id", "fare", "pickup", "tip"]
    assert str(df.schema["fare"].dataType) == "DecimalType(8,2)"
    rows = sorted((r.trip_id, r.tip) for r in df.where("_corrupt_record IS NULL").collect())
    assert rows == [(f"s{i}", 0.5) for i in range(4)]
    corrupt = df.where("_corrupt_record IS NOT NULL").collect()  # the extra record, kept
    assert [r._corrupt_record.value for r in corrupt] == [b"\x00\x00\x00"]
    with pytest.raises(Exception, match="subject 'nope-value' version latest does not exist"):
        reader.option("subject", "nope-value").load()


def test_on_error_fail_fails_the_run_naming_the_record_and_publishes_nothing(
        broker, spark, airflow_db, registry, tmp_path, capfd):
    from datetime import datetime, timezone

    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    topic = unique("avro-fail")
    create_topic(broker.bootstrap, topic, 1)
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    trips = [{"trip_id": f"f{i}", "fare": "1.00", "pickup": at} for i in range(5)]
    produce(broker.bootstrap, topic, registry, V1, trips[:3])
    cfg = pipeline(broker, topic, tmp_path, on_error="fail")
    run_dag(cfg)
    store = OfflineCheckpointStore(f"streamslice/{cfg.name}")
    before = present(store.get()).to_dict()
    produce(broker.bootstrap, topic, registry, V1, trips[3:], extra=[b"\x00\x00\x00\x03\xe7\x02"])
    capfd.readouterr()
    run_dag(cfg, expect="failed")
    out, err = capfd.readouterr()  # the task's log, as dag.test() prints it
    assert (f"DecodeError: {topic}:0 offset 5: schema id 999 is not in the Confluent Schema "
            f"Registry at {registry.url} (format.on_error is fail)\n") in out + err
    dataset = cfg.output.dataset(cfg.name)
    assert sorted(os.listdir(dataset)) == ["batch=00000001"]  # nothing of the run published
    assert not os.path.exists(f"{tmp_path}/lake/_streamslice/pipeline={cfg.name}/dead_letter/"
                              "batch=00000002")
    assert present(store.get()).to_dict() == before  # the next run reads the same records again


def test_a_registry_down_at_plan_time_names_the_task_and_its_retries(
        broker, airflow_db, tmp_path, capfd):
    """retries: 0 and a registry that does not answer: the plan task fails saying the
    registry cannot be reached, which task failed and that it is not retried (it used to say
    "the read will be retried")."""
    from devtools.services import free_port
    topic = unique("avro-down")
    create_topic(broker.bootstrap, topic, 1)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = kafka_pipeline(broker.bootstrap, topic, retries=0, output=f"{tmp_path}/lake",
                         format={"value": "avro", "registry": {"url": url},
                                 "subject": f"{topic}-value"})
    capfd.readouterr()
    run = run_dag(cfg, expect="failed")
    out, err = capfd.readouterr()  # the task's log, as dag.test() prints it
    assert {ti.task_id: str(ti.state) for ti in run.get_task_instances()}["plan"] == "failed"
    assert (f"SourceError: the Confluent Schema Registry at {url} cannot be reached for "
            f"subject '{topic}-value' version latest: ") in out + err
    assert "(task plan, try 1 of 1: not retried, retries: 0)" in out + err
    assert "will be retried" not in out + err


def test_schema_ids_in_record_headers_through_a_dag_run(broker, spark, airflow_db, registry,
                                                        tmp_path):
    """Records written by confluent-kafka's AvroSerializer with header_schema_id_serializer
    (the schema GUID in __value_schema_id, the bare payload as the value) land as rows
    through Airflow and Spark; a bare payload starting 0x00 (an empty first string) was a
    dead letter before ("schema id … is not in the Confluent Schema Registry")."""
    from datetime import datetime, timezone
    from decimal import Decimal

    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    topic = unique("avro-hdr")
    create_topic(broker.bootstrap, topic, 1)
    client = SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": "reader:s3cret"})
    ser = AvroSerializer(client, json.dumps(V1),
                         conf={"schema.id.serializer": header_schema_id_serializer})
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with producer(broker.bootstrap) as p:
        for trip in ("", "h1", "h2"):
            headers: list = []
            value = ser({"trip_id": trip, "fare": Decimal("1.25"), "pickup": at},
                        SerializationContext(topic, MessageField.VALUE, headers))
            assert [h[0] for h in headers] == ["__value_schema_id"]
            p.produce(topic, key=b"k", value=value, headers=headers, partition=0)
    cfg = pipeline(broker, topic, tmp_path, key="string")
    run_dag(cfg)
    table = pq.read_table(f"{cfg.output.dataset(cfg.name)}/batch=00000001")
    assert sorted(table.column("trip_id").to_pylist()) == ["", "h1", "h2"]
    assert [str(f) for f in table.column("fare").to_pylist()] == ["1.25"] * 3
    assert not os.path.exists(f"{tmp_path}/lake/_streamslice/pipeline={cfg.name}/dead_letter")
