"""Records that fail to decode land in the dead-letter output with their offset and reason,
counted in the manifest, never dropped. Both readers."""
import json
import os

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from devtools.services import create_topic
from tests.support.checks import present
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = pytest.mark.integration

BAD = {3: (b"k3", b"{not json"), 7: (b"k7", b'{"id": "seven", "fare": 1.0}'),
       11: (b"k11", b"[1, 2]"), 12: (b"\xff\xfe", b'{"id": 12, "fare": 2.5}')}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_malformed_records_go_to_dead_letters(broker, spark, airflow_db, client):
    topic = unique("decode")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for i in range(20):
            key, value = BAD.get(i, (f"k{i}".encode(),
                                     json.dumps({"id": i, "fare": i / 2}).encode()))
            p.produce(topic, key=key, value=value, partition=0, timestamp=1_714_521_600_000 + i,
                      headers=[("source", b"test")])
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("decode"), retries=0,
                         kafka={"client": client},
                         format={"value": "json", "key": "string",
                                 "schema": {"id": "long", "fare": "double"}})
    run_dag(cfg)
    part = f"{cfg.output.dataset(cfg.name)}/batch=00000001"
    good = ds.dataset(part, format="parquet").to_table()
    assert sorted(good.column("offset").to_pylist()) == [i for i in range(20) if i not in BAD]
    assert good.column("headers").to_pylist()[0] == [{"key": "source", "value": b"test"}]
    from streamslice.commit.manifest import read_manifest
    manifest = present(read_manifest(cfg.output.dataset(cfg.name), "batch=00000001"))
    dead_uri = manifest["dead_letter_uri"]
    assert dead_uri.endswith(f"/_streamslice/pipeline={cfg.name}/dead_letter/batch=00000001")
    assert not any(p.endswith("_dead_letter") for p in os.listdir(part))  # only data there
    dead = pq.read_table(dead_uri).to_pylist()
    reasons = {r["offset"]: r["error"] for r in dead}
    assert sorted(reasons) == sorted(BAD)
    assert reasons[3].startswith("invalid JSON")
    assert reasons[7] == "field 'id': expected long, got \"seven\""
    assert reasons[11] == "expected a JSON object, got list"
    assert reasons[12] == "key is not valid UTF-8 at byte 0"
    assert {r["offset"]: r["value"] for r in dead}[3] == b"{not json"
    manifest = json.load(open(f"{part}/_manifest.json"))
    assert manifest["dead_letters"] == 4 and manifest["records"] == 16


def test_values_that_cannot_become_rows_are_dead_letters_not_crashes(broker, spark,
                                                                        airflow_db):
    """Values that used to crash the Spark job on every re-run (OverflowError, OSError,
    RecursionError, UnicodeEncodeError) are dead letters with their reason."""
    topic = unique("hostile")
    create_topic(broker.bootstrap, topic, 1)
    hostile = [b'{"id": 99999999999999999999999, "ts": 0, "name": "a"}',
               b'{"id": 1, "ts": 1e20, "name": "b"}', b"[" * 100_000,
               b'{"id": 2, "ts": 0, "name": "\\ud800"}']
    good = [json.dumps({"id": i, "ts": i, "name": f"n{i}"}).encode() for i in range(3)]
    with producer(broker.bootstrap) as p:
        for value in good[:1] + hostile + good[1:]:
            p.produce(topic, value=value, partition=0)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("hostile"), retries=0,
                         format={"value": "json",
                                 "schema": {"id": "long", "ts": "timestamp", "name": "string"}})
    run_dag(cfg)
    from streamslice.commit.manifest import read_manifest
    manifest = present(read_manifest(cfg.output.dataset(cfg.name), "batch=00000001"))
    assert (manifest["records"], manifest["dead_letters"]) == (3, 4)


KEY_DDL = "customer_id BIGINT, region STRING, tags ARRAY<STRING>"


def test_json_keys_land_as_spark_from_json_reads_them(broker, spark, airflow_db):
    """``format.key: json`` through a DAG run (key fields as top-level columns) and Spark's
    ``keyFormat``/``keySchema`` (one ``key`` struct column): each key as Spark's own
    ``from_json(CAST(key AS STRING), schema)`` reads it, a record without a key with null key
    columns, a bad key a dead letter."""
    from pyspark.sql import functions as F

    from streamslice.commit.manifest import read_manifest
    topic = unique("jsonkey")
    create_topic(broker.bootstrap, topic, 1)
    keys: list[bytes | None] = [
        json.dumps({"customer_id": i, "region": "eu" if i % 2 else "us",
                    "tags": [f"t{i}"] * (i % 3)}).encode() for i in range(10)]
    keys[3] = None  # a record without a key
    keys.append(b'{"customer_id": "eleven"}')  # offset 10: a key that does not fit
    keys.append(b'{"customer_id": 11}')
    with producer(broker.bootstrap) as p:
        for i, key in enumerate(keys):
            p.produce(topic, key=key, value=json.dumps({"amount": i / 4}).encode(),
                      partition=0)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("jsonkey"), retries=0,
                         format={"value": "json", "schema": "amount DOUBLE",
                                 "key": "json", "key_schema": KEY_DDL})
    run_dag(cfg)
    part = f"{cfg.output.dataset(cfg.name)}/batch=00000001"
    got = pq.read_table(part).sort_by("offset")
    assert got.column_names[:4] == ["customer_id", "region", "tags", "amount"]
    assert got.column("offset").to_pylist() == [*range(10), 11]
    manifest = present(read_manifest(cfg.output.dataset(cfg.name), "batch=00000001"))
    dead = pq.read_table(manifest["dead_letter_uri"]).to_pylist()
    assert [(r["offset"], r["error"]) for r in dead] == [
        (10, "key: field 'customer_id': expected long, got \"eleven\"")]

    raw = (spark.read.format("streamslice-kafka")
           .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
           .load())
    spark_keys = {r.offset: r.k.asDict(recursive=True) if r.k else None for r in raw.select(
        "offset", F.from_json(F.col("key").cast("string"), KEY_DDL).alias("k")).collect()}
    ours = {r["offset"]: {k: r[k] for k in ("customer_id", "region", "tags")}
            for r in got.to_pylist()}
    assert ours[3] == {"customer_id": None, "region": None, "tags": None}
    spark_keys[3] = ours[3]  # Spark's null struct: our null key columns
    assert ours == {o: spark_keys[o] for o in ours}

    nested = (spark.read.format("streamslice-kafka")
              .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
              .option("endingOffsets", json.dumps({topic: {"0": 10}}))
              .option("keyFormat", "json").option("keySchema", KEY_DDL)
              .option("flatten", "false").load())
    assert nested.columns[:2] == ["key", "value"]
    assert {r.offset: r.key.asDict(recursive=True) if r.key else None
            for r in nested.collect()} == {o: spark_keys[o] if o != 3 else None
                                           for o in range(10)}


def test_a_run_whose_every_record_is_a_dead_letter_fails_unless_expected(broker, spark,
                                                                           airflow_db, capfd):
    """A schema that matches none of the records dead-letters them all: the run fails with
    the first reasons and publishes nothing, unless format.allow_all_dead_letters says such
    runs are expected. A run with no records at all is not such a run."""
    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    topic = unique("alldead")
    create_topic(broker.bootstrap, topic, 1)
    name = unique("alldead")

    def pipeline(**fmt):
        return kafka_pipeline(broker.bootstrap, topic, name=name, retries=0,
                              format={"value": "json", "schema": "id BIGINT NOT NULL", **fmt})
    run_dag(pipeline())  # nothing to read: an empty run is a success
    with producer(broker.bootstrap) as p:
        for i in range(5):
            p.produce(topic, value=json.dumps({"order": i}).encode(), partition=0)
    store = OfflineCheckpointStore(f"streamslice/{name}")
    before = present(store.get()).to_dict()
    capfd.readouterr()
    run_dag(pipeline(), expect="failed")
    out, err = capfd.readouterr()
    assert ("AllDeadLettersError: batch=00000002: all 5 records the run read are dead "
            "letters, none decoded (first reasons: field 'id': is NOT NULL, got nothing; "
            "field 'id': is NOT NULL, got nothing; field 'id': is NOT NULL, got nothing); the "
            "format most likely does not match the records.") in out + err
    dataset = pipeline().output.dataset(name)
    assert sorted(os.listdir(dataset)) == ["batch=00000001"]  # nothing of the run published
    assert present(store.get()).to_dict() == before
    cfg = pipeline(allow_all_dead_letters=True)
    run_dag(cfg)
    from streamslice.commit.manifest import read_manifest
    manifest = present(read_manifest(dataset, "batch=00000002"))
    assert (manifest["records"], manifest["dead_letters"]) == (0, 5)
