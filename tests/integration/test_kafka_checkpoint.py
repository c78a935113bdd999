"""The checkpoint API: read it, reset it to earliest / a timestamp / offsets / latest, and the
next incremental run replays from there into a new batch. The Kafka connection comes from an
Airflow connection id with client properties in its extra."""
import json

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.airflow.checkpoints import reset_checkpoint, show_checkpoint
from tests.support.pipelines import run_dag, unique, write_pipeline

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


def test_reset_and_replay(broker, spark, airflow_db, monkeypatch, tmp_path):
    topic = unique("reset")
    create_topic(broker.bootstrap, topic, 2)
    monkeypatch.setenv("AIRFLOW_CONN_TEST_KAFKA", json.dumps(
        {"conn_type": "kafka", "extra": {"bootstrap.servers": broker.bootstrap,
                                         "client.id": "streamslice-test"}}))
    cfg = write_pipeline(unique("reset"), f"""
mode: incremental
retries: 0
kafka:
  conn_id: test_kafka
  topics: [{topic}]
output:
  path: {tmp_path}
""")
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 100, seed=2), partitions=2)
    run_dag(cfg)
    assert show_checkpoint(cfg).positions == {f"{topic}:0": 50, f"{topic}:1": 50}

    def batch(n):
        t = ds.dataset(f"{cfg.output.dataset(cfg.name)}/batch={n:08d}").to_table()
        return sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))

    assert reset_checkpoint(cfg, "earliest").positions == {f"{topic}:0": 0, f"{topic}:1": 0}
    run_dag(cfg)
    assert batch(2) == batch(1) == sorted((p, o) for p, o, _ in sent)

    ts = sorted(t for _, _, t in sent)[60]
    cp = reset_checkpoint(cfg, {"timestamp": ts})
    expected = {p: min(o for q, o, t in sent if q == p and t >= ts) for p in (0, 1)}
    assert cp.positions == {f"{topic}:{p}": o for p, o in expected.items()}
    assert cp.batch == 2, "a reset keeps the batch counter so replays never overwrite"

    reset_checkpoint(cfg, {"offsets": {f"{topic}:0": 45, f"{topic}:1": 48}})
    run_dag(cfg)
    assert batch(3) == [(0, o) for o in range(45, 50)] + [(1, 48), (1, 49)]

    assert reset_checkpoint(cfg, "latest").positions == {f"{topic}:0": 50, f"{topic}:1": 50}
