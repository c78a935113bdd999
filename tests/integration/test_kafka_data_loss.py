"""A start below the log start: the run fails with the exact gap, or skips it and records it."""
import json

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
from streamslice.errors import DataLossError
from streamslice.planning.planner import plan_run
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


def _delete_up_to(bootstrap, topic, partition, offset):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_records([TopicPartition(topic, partition, offset)]).values():
        f.result(timeout=30)


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_expired_range(broker, spark, airflow_db, policy):
    topic = unique("loss")
    create_topic(broker.bootstrap, topic, 1)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("loss"), retries=0,
                         kafka={"on_data_loss": policy})
    produce(broker.bootstrap, topic, trips(T0, 1, 50, seed=1), partitions=1)
    run_dag(cfg)
    store = OfflineCheckpointStore(f"streamslice/{cfg.name}")
    assert present(store.get()).positions == {f"{topic}:0": 50}
    produce(broker.bootstrap, topic, trips(T0 + 3_600_000, 1, 50, seed=2), partitions=1)
    _delete_up_to(broker.bootstrap, topic, 0, 70)  # offsets 50..69 expire before the next run

    if policy == "fail":
        with pytest.raises(DataLossError, match=rf"{topic}:0: records expired between offset "
                                                 r"50 and 70"):
            plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, checkpoint=store.get(),
                     properties=cfg.source.client_properties())
        run = run_dag(cfg, expect="failed")
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        assert states == {"plan": "failed", "read": "upstream_failed",
                          "commit": "upstream_failed"}
        assert present(store.get()).positions == {f"{topic}:0": 50}
    else:
        run_dag(cfg)
        assert present(store.get()).positions == {f"{topic}:0": 100}
        part = f"{cfg.output.dataset(cfg.name)}/batch=00000002"
        manifest = json.load(open(f"{part}/_manifest.json"))
        assert manifest["gaps"] == [{"key": f"{topic}:0", "from": 50, "to": 70,
                                     "reason": "expired"}]
        assert manifest["records"] == 30
