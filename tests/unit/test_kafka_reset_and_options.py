"""Kafka resets over a fake admin client (our own logic only; the real broker is covered by
the integration tests), and the ``plan`` option."""
import pytest

from streamslice.errors import ConfigError
from streamslice.spark.plan_options import plan_from_options
from tests.unit.test_planner import LOGS, FakeAdmin, source


class Admin(FakeAdmin):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def fake_admin(monkeypatch):
    from streamslice.kafka.planner import KafkaPlanner
    admin = Admin(LOGS, log_start={("t", 0): 2})
    monkeypatch.setattr(KafkaPlanner, "_admin", lambda self, props: admin)
    return admin


@pytest.mark.parametrize("to, positions", [
    ("earliest", {"t:0": 2, "t:1": 0}),
    ("TRIM_HORIZON", {"t:0": 2, "t:1": 0}),
    ("latest", {"t:0": 10, "t:1": 10}),
    ({"timestamp": 25}, {"t:0": 3, "t:1": 4}),
    ({"offsets": {"t:1": 7}}, {"t:0": 2, "t:1": 7}),  # unlisted partitions: earliest
])
def test_kafka_reset_targets(fake_admin, to, positions):
    target = source().planner().reset_positions(to, {})
    assert target.positions == positions and target.source_state == {}


def test_kafka_reset_refuses_unknown_partitions_and_committed(fake_admin):
    with pytest.raises(ConfigError, match="t:5 is not a partition this pipeline reads"):
        source().planner().reset_positions({"offsets": {"t:5": 1}}, {})
    with pytest.raises(ConfigError, match="give earliest, latest, a timestamp or offsets"):
        source().planner().reset_positions("committed", {})


def test_plan_option_round_trips_and_bad_plans_are_named():
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import OutputTarget, ReadPlan
    plan = ReadPlan(pipeline="p", source="kafka", mode="bounded", planned_at=1,
                    splits=[KafkaSplit(0, "t", 0, 0, 3)], partition="run=x",
                    output=OutputTarget("/d"))
    assert plan_from_options({"plan": plan.to_json()}, "kafka") == plan
    with pytest.raises(ConfigError, match="option plan is not a streamslice ReadPlan"):
        plan_from_options({"plan": "{}"}, "kafka")
