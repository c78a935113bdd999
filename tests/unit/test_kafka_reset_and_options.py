"""Kafka resets and Spark's Kafka option parser, over a fake admin client (our own logic only;
the real broker is covered by the integration tests)."""
import json

import pytest

from streamslice.errors import ConfigError
from streamslice.kafka.options import kafka_from_options
from streamslice.kafka.positions import Earliest, Latest, Specified, Timestamp
from streamslice.kafka.subscriber import PartitionSet, TopicList, TopicPattern
from streamslice.spark.options import plan_from_options
from tests.unit.test_planner import LOGS, FakeAdmin, source


class Admin(FakeAdmin):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def fake_admin(monkeypatch):
    from streamslice.kafka.source import KafkaSource
    admin = Admin(LOGS, log_start={("t", 0): 2})
    monkeypatch.setattr(KafkaSource, "_admin", lambda self, props: admin)
    return admin


@pytest.mark.parametrize("to, positions", [
    ("earliest", {"t:0": 2, "t:1": 0}),
    ("TRIM_HORIZON", {"t:0": 2, "t:1": 0}),
    ("latest", {"t:0": 10, "t:1": 10}),
    ({"timestamp": 25}, {"t:0": 3, "t:1": 4}),
    ({"offsets": {"t:1": 7}}, {"t:0": 2, "t:1": 7}),  # unlisted partitions: earliest
])
def test_kafka_reset_targets(fake_admin, to, positions):
    target = source().reset_positions(to, {})
    assert target.positions == positions and target.source_state == {}


def test_kafka_reset_refuses_unknown_partitions_and_committed(fake_admin):
    with pytest.raises(ConfigError, match="t:5 is not a partition this pipeline reads"):
        source().reset_positions({"offsets": {"t:5": 1}}, {})
    with pytest.raises(ConfigError, match="give earliest, latest, a timestamp or offsets"):
        source().reset_positions("committed", {})


def opts(**kw):
    base = {"kafka.bootstrap.servers": "b:9092"}
    base.update(kw)
    return {k.lower(): v for k, v in base.items()}


def test_spark_kafka_options():
    src, props = kafka_from_options(opts(subscribe="a, b", startingOffsets="earliest",
                                         **{"kafka.security.protocol": "SSL"}))
    assert src.subscriber == TopicList(("a", "b"))
    assert (src.start, src.stop) == (Earliest(), Latest())
    assert props == {"bootstrap.servers": "b:9092", "security.protocol": "SSL"}
    assert src.properties == {"security.protocol": "SSL"}
    src, _ = kafka_from_options(opts(subscribePattern="ord.*", startingTimestamp="1000",
                                     endingOffsets=json.dumps({"o": {"0": 5}}),
                                     failOnDataLoss="false"))
    assert src.subscriber == TopicPattern("ord.*") and src.start == Timestamp(1000)
    assert src.stop == Specified({"o:0": 5}) and src.on_data_loss == "skip"
    src, _ = kafka_from_options(opts(assign=json.dumps({"t": [0, 2]})))
    assert src.subscriber == PartitionSet((("t", 0), ("t", 2)))


@pytest.mark.parametrize("given, message", [
    ({}, "give exactly one of the options subscribe, subscribePattern, assign"),
    ({"subscribe": "a", "assign": "{}"}, "give exactly one of the options"),
    ({"subscribe": "a", "startingOffsets": "{nope"}, "option startingoffsets is not valid JSON"),
    ({"subscribe": "a", "startingOffsets": json.dumps({"a": {"0": -2}})},
     "use 'earliest'/'latest' instead of -2/-1"),
])
def test_spark_kafka_option_errors(given, message):
    with pytest.raises(ConfigError, match=message):
        kafka_from_options(opts(**given))
    with pytest.raises(ConfigError, match="kafka.bootstrap.servers is required"):
        kafka_from_options({"subscribe": "a"})


def test_plan_option_round_trips_and_bad_plans_are_named():
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import OutputTarget, ReadPlan
    plan = ReadPlan(pipeline="p", source="kafka", mode="bounded", planned_at=1,
                    splits=[KafkaSplit(0, "t", 0, 0, 3)], partition="run=x",
                    output=OutputTarget("/d"))
    assert plan_from_options({"plan": plan.to_json()}, "kafka") == plan
    with pytest.raises(ConfigError, match="option plan is not a streamslice ReadPlan"):
        plan_from_options({"plan": "{}"}, "kafka")
