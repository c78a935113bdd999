"""Avro behind the AWS Glue Schema Registry on a Kinesis stream, end to end: records written by
the ``aws-glue-schema-registry`` package's serializer (some zlib-compressed by its codec) into
the local Kinesis server, the schemas in moto_server's Glue registry (another process, over
HTTP), Airflow runs through dag.test() and Spark. Schema v1, then v2 with an added field: each
run reads as the latest version when it is planned; a record naming a schema version Glue
never had is a dead letter; the Glue connection's keys never reach the plan nor the
tasks' logs."""
import json
import logging
import uuid

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from streamslice.commit.manifest import read_manifest
from tests.support.checks import present
from tests.support.connections import aws_connection
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kinesis_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
SECRET = "glue-s3cret-key"  # the Glue connection's secret key: must reach no plan
V1 = {"type": "record", "name": "Trip", "namespace": "demo", "fields": [
    {"name": "trip_id", "type": "string"},
    {"name": "fare", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8,
                              "scale": 2}}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "tip", "type": ["null", "double"],
                                       "default": None}]}


@pytest.fixture(scope="module")
def glue(sns_queue, kinesis):
    """A Glue registry on the session's moto_server, and Airflow connections to it and to the
    local Kinesis server."""
    moto = sns_queue[0]
    registry = unique("streams")
    client = moto.client("glue")
    client.create_registry(RegistryName=registry)
    with pytest.MonkeyPatch.context() as mp:
        aws_connection(mp, "test_glue", moto.endpoint, login="glue-reader", password=SECRET)
        aws_connection(mp, "test_kinesis", kinesis.endpoint)
        yield client, registry
    client.delete_registry(RegistryId={"RegistryName": registry})


def serialized(client, registry, schema, records, compress=()):
    """Records as the AWS library writes them; those at ``compress`` zlib-compressed by its
    codec (its serializer has no switch for it)."""
    from decimal import Decimal

    from aws_schema_registry import DataAndSchema, SchemaRegistryClient, codec
    from aws_schema_registry.adapter.kafka import KafkaSerializer
    from aws_schema_registry.avro import AvroSchema
    lib = SchemaRegistryClient(client, registry_name=registry, wait_interval_seconds=0.01)
    ser = KafkaSerializer(lib, compatibility_mode="BACKWARD",
                          schema_naming_strategy=lambda *_: "trips")
    out = [ser.serialize("trips", DataAndSchema({**r, "fare": Decimal(r["fare"])},
                                                AvroSchema(schema))) for r in records]
    return [codec.encode(*codec.decode(data), compression=True) if i in compress else data
            for i, data in enumerate(out)]


def rows(path):
    table = ds.dataset(path, format="parquet").to_table()
    return table, sorted(table.drop_columns(
        [c for c in table.column_names if c not in ("trip_id", "fare", "tip")]).to_pylist(),
        key=lambda r: r["trip_id"])


def test_glue_avro_on_kinesis_v1_then_v2(glue, kinesis, spark, airflow_db, tmp_path, caplog):
    from decimal import Decimal
    caplog.set_level(logging.INFO, logger="streamslice")
    client, registry = glue
    stream = unique("glue-trips")
    create_stream(kinesis.client(), stream, 2)
    first = serialized(client, registry, V1, [{"trip_id": f"a{i}", "fare": f"{i}.25"}
                                              for i in range(4)], compress={1, 3})
    assert {data[1] for data in first} == {0, 5}  # plain and zlib frames
    put(kinesis.client(), stream, first)
    cfg = kinesis_pipeline(stream, retries=0, output=str(tmp_path / "lake"),
                           kinesis={"conn_id": "test_kinesis", "polling": {"interval": "50ms"}},
                           format={"value": "avro", "subject": "trips",
                                   "registry": {"kind": "glue", "registry_name": registry,
                                                "aws_conn_id": "test_glue"}})
    run = run_dag(cfg)
    dataset = cfg.output.dataset(cfg.name)
    one, got = rows(f"{dataset}/batch=00000001")
    assert got == [{"trip_id": f"a{i}", "fare": Decimal(f"{i}.25")} for i in range(4)]
    assert str(one.schema.field("fare").type) == "decimal128(8, 2)"
    plan = run.get_task_instance("plan").xcom_pull(task_ids="plan")
    assert plan["decode"]["value"]["options"]["reader"]["version"] == 1
    assert SECRET not in json.dumps(plan)

    second = serialized(client, registry, V2, [{"trip_id": f"b{i}", "fare": "1.50", "tip": i / 2}
                                               for i in range(3)], compress={0})
    unknown = second[1][:2] + uuid.uuid4().bytes + second[1][18:]
    late = serialized(client, registry, V1, [{"trip_id": "late-v1", "fare": "2.00"}], {0})
    put(kinesis.client(), stream, [*second, unknown, *late])
    run = run_dag(cfg)
    two, got = rows(f"{dataset}/batch=00000002")
    assert got == [{"trip_id": "b0", "fare": Decimal("1.50"), "tip": 0.0},
                   {"trip_id": "b1", "fare": Decimal("1.50"), "tip": 0.5},
                   {"trip_id": "b2", "fare": Decimal("1.50"), "tip": 1.0},
                   {"trip_id": "late-v1", "fare": Decimal("2.00"), "tip": None}]
    assert "tip" not in one.column_names
    plan = run.get_task_instance("plan").xcom_pull(task_ids="plan")
    reader = plan["decode"]["value"]["options"]["reader"]
    assert (reader["subject"], reader["version"]) == ("trips", 2)
    assert SECRET not in json.dumps(plan)
    logged = "\n".join(r.getMessage() for r in caplog.records)  # the tasks' logs
    assert "Planned 2 splits" in logged and SECRET not in logged
    dead = pq.read_table(present(read_manifest(dataset, "batch=00000002"))["dead_letter_uri"])
    assert dead.column("data").to_pylist() == [unknown]
    assert dead.column("error").to_pylist() == [
        f"schema version {uuid.UUID(bytes=unknown[2:18])} is not in the AWS Glue Schema "
        f"Registry {registry!r}"]
