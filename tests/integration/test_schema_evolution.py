"""Schema evolution through real DAG runs (Airflow dag.test(), Spark, the broker): a new
optional field in the pipeline's schema, nested included, adds a column to an Iceberg or Delta
table and gives a Parquet dataset's new partition the new schema, while older data reads null
there; a change the table's rows cannot follow fails the run naming the field, with nothing of
that run published."""
import json
import os

import pyarrow.parquet as pq
import pytest

from devtools.duck import connect
from devtools.services import create_topic
from tests.integration.test_lake_tables import readers
from tests.support.kafka import producer
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000
HOUR = 3_600_000
V1 = "trip_id STRING, rider STRUCT<name: STRING>, tags ARRAY<STRING>"
V2 = "trip_id STRING, rider STRUCT<name: STRING, rating: DOUBLE>, tags ARRAY<STRING>, " \
     "fare DECIMAL(8,2)"
BROKEN = "trip_id STRING, rider STRUCT<name: STRING, rating: STRING>, tags ARRAY<STRING>"


def pipeline(name, broker, topic, tmp_path, fmt, schema, **decoding):
    return kafka_pipeline(broker.bootstrap, topic, name=name, mode="interval",
                          schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                          format={"value": "json", "schema": schema, **decoding},
                          output={"path": str(tmp_path), "format": fmt})


@pytest.mark.parametrize("fmt", ["parquet", "iceberg", "delta"])
def test_a_new_nested_field_evolves_the_output_and_a_broken_one_fails_the_run(
        broker, spark, airflow_db, tmp_path, fmt, capfd):
    topic, name = unique("evolve"), unique(f"evolve_{fmt}")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for hour in range(3):
            for i in range(5):
                value = {"trip_id": f"{hour}-{i}", "rider": {"name": f"r{i}", "rating": 4.5},
                         "tags": ["a"] * i, "fare": "12.50"}
                p.produce(topic, value=json.dumps(value).encode(), partition=0,
                          timestamp=T0 + hour * HOUR + i)
        p.produce(topic, value=b"{not json", partition=0, timestamp=T0 + 2 * HOUR + 9)
    run_dag(pipeline(name, broker, topic, tmp_path, fmt, V1), logical_date=utc(2024, 5, 1, 1))
    cfg = pipeline(name, broker, topic, tmp_path, fmt, V2)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 2))

    if fmt == "parquet":
        dataset = cfg.output.dataset(cfg.name)
        old, new = (pq.read_schema(f"{dataset}/interval=20240501T0{h}0000Z/part-00000.parquet")
                    for h in (0, 1))
        assert "fare" not in old.names and "rating" not in str(old.field("rider").type)
        assert "fare" in new.names and "rating" in str(new.field("rider").type)
        rows = connect().sql(
            f"SELECT trip_id, rider.rating, fare FROM read_parquet('{dataset}/**/*.parquet', "
            "union_by_name=true) ORDER BY trip_id").fetchall()
    else:
        table = readers(cfg, fmt)[0]()
        rows = sorted((r["trip_id"], r["rider"]["rating"], r["fare"])
                      for r in table.select(["trip_id", "rider", "fare"]).to_pylist())
    assert [r[0] for r in rows] == [f"{h}-{i}" for h in (0, 1) for i in range(5)]
    assert {(r[1], str(r[2])) for r in rows[:5]} == {(None, "None")}  # written before v2
    assert {(r[1], str(r[2])) for r in rows[5:]} == {(4.5, "12.50")}

    if fmt == "parquet":
        return  # each partition has its own schema: nothing to refuse
    # every record of hour 2 is a dead letter under BROKEN (a double is no string): allowed
    # here, so what fails the run is the table's own type check
    broken = pipeline(name, broker, topic, tmp_path, fmt, BROKEN, allow_all_dead_letters=True)
    capfd.readouterr()
    run_dag(broken, logical_date=utc(2024, 5, 1, 3), expect="failed")
    out, err = capfd.readouterr()  # the task's log, as dag.test() prints it
    assert "field 'rider.rating' is double in the table, string now" in out + err
    after = readers(cfg, fmt)[0]()
    assert after.num_rows == 10  # hour 2 was not published
    dead = f"{tmp_path}/_streamslice/pipeline={name}/dead_letter/interval=20240501T020000Z"
    assert not os.path.exists(dead)  # nor its dead letter
