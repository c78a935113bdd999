"""The checkpoint API: read it, reset it to earliest / a timestamp / offsets / latest, and the
next incremental run replays from there into a new batch. The Kafka connection comes from an
Airflow connection id with client properties in its extra."""

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.airflow.checkpoint_store import reset_checkpoint, show_checkpoint
from tests.support.checks import present
from tests.support.connections import connection
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


def test_reset_and_replay(broker, spark, airflow_db, monkeypatch, tmp_path):
    topic = unique("reset")
    create_topic(broker.bootstrap, topic, 2)
    connection(monkeypatch, "test_kafka", "kafka", extra={"bootstrap.servers": broker.bootstrap,
                                                          "client.id": "streamslice-test"})
    cfg = kafka_pipeline(None, topic, name=unique("reset"), retries=0, output=tmp_path,
                         kafka={"conn_id": "test_kafka"})
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 100, seed=2), partitions=2)
    run_dag(cfg)
    assert present(show_checkpoint(cfg)).positions == {f"{topic}:0": 50, f"{topic}:1": 50}

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


def test_progress_is_mirrored_to_a_consumer_group_and_metrics_reach_the_asset_event(
        broker, spark, airflow_db, tmp_path):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    topic = unique("group")
    create_topic(broker.bootstrap, topic, 2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("group"), retries=0,
                         output=tmp_path)
    produce(broker.bootstrap, topic, trips(T0, 1, 60, seed=4), partitions=2)
    run = run_dag(cfg)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    request = [ConsumerGroupTopicPartitions(f"streamslice-{cfg.name}",
                                            [TopicPartition(topic, 0), TopicPartition(topic, 1)])]
    got = list(admin.list_consumer_group_offsets(request).values())[0].result()
    assert sorted((tp.partition, tp.offset) for tp in got.topic_partitions) == [(0, 30), (1, 30)]

    metrics = run.get_task_instance("commit").xcom_pull(task_ids="commit")
    assert metrics["records"] == 60 and metrics["lag_records"] == 60 and metrics["splits"] == 2
    assert metrics["checkpoint"]["positions"] == {f"{topic}:0": 30, f"{topic}:1": 30}
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select
    with create_session() as session:
        asset_id = session.scalar(select(AssetModel.id).where(
            AssetModel.name == f"streamslice/{cfg.name}"))
        event = session.scalars(select(AssetEvent).where(AssetEvent.asset_id == asset_id)).one()
        assert event.extra["records"] == 60 and event.extra["bytes"] > 0
