"""Interval mode over three consecutive hours, through Airflow's dag.test(), real Spark and a
real broker: each hour's partition holds exactly the records whose timestamps fall in it."""
from collections import Counter

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import TRIP_SCHEMA, produce, trips
from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration

BASE = utc(2024, 5, 1)
HOUR = 3_600_000


def test_three_hours_each_interval_exact(broker, spark, airflow_db, tmp_path):
    topic = unique("trips")
    create_topic(broker.bootstrap, topic, 4)
    base_ms = int(BASE.timestamp() * 1000)
    sent = produce(broker.bootstrap, topic, trips(base_ms, hours=3, per_hour=400, seed=11,
                                                  late_share=0.08, max_delay_ms=300_000))
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("taxi_interval"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                         allowed_lateness="10m", kafka={"max_records_per_split": 150},
                         format={"value": "json", "key": "string", "schema": dict(TRIP_SCHEMA),
                          "epoch_unit": "millis"},
                         output=tmp_path / "lake")
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))

    expected = Counter((ts - base_ms) // HOUR for _, _, ts in sent)
    dataset = cfg.output.dataset(cfg.name)
    seen: Counter[tuple[int, int]] = Counter()
    for hour in range(3):
        part = f"{dataset}/interval=20240501T{hour:02d}0000Z"
        table = ds.dataset(part, format="parquet").to_table()
        assert table.num_rows == expected[hour], f"hour {hour}"
        assert not any(table.column("is_late").to_pylist())
        seen.update(zip(table.column("partition").to_pylist(),
                        table.column("offset").to_pylist()))
    assert sorted(seen) == sorted((p, o) for p, o, _ in sent)
    assert set(seen.values()) == {1}, "a record landed twice"

    checkpoint = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    assert checkpoint.interval_end == base_ms + 3 * HOUR


def test_records_beyond_lateness_are_kept_flagged_and_counted(broker, spark, airflow_db,
                                                               tmp_path):
    topic = unique("late")
    create_topic(broker.bootstrap, topic, 1)
    base_ms = int(BASE.timestamp() * 1000)
    from devtools.taxi import Trip
    # Event times in produce order; the 00:10 trip arrives at 01:30, long after 01:00 + 5m.
    times = [base_ms + m * 60_000 for m in (5, 20, 50, 70, 90)] + [base_ms + 10 * 60_000] + \
        [base_ms + m * 60_000 for m in (100, 130, 150)]
    sent = produce(broker.bootstrap, topic, [Trip(b"k", b"{}", t) for t in times])
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("late"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                         allowed_lateness="5m", output=tmp_path)
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    import json
    rows = {}
    for hour in range(3):
        part = f"{cfg.output.dataset(cfg.name)}/interval=20240501T{hour:02d}0000Z"
        t = ds.dataset(part, format="parquet").to_table()
        rows[hour] = sorted(zip(t.column("offset").to_pylist(), t.column("is_late").to_pylist()))
        assert json.load(open(f"{part}/_manifest.json"))["late_records"] == \
            sum(late for _, late in rows[hour])
    assert rows == {0: [(0, False), (1, False), (2, False)],
                    1: [(3, False), (4, False), (5, True), (6, False)],
                    2: [(7, False), (8, False)]}
    assert len(sent) == 9
