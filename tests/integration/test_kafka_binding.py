"""Where a read given as Spark options binds each side (``kafka.binding``), on the real broker:
timestamps on the driver, once, into the offsets a task then reads as they are (a retried
task reads the same range); ``earliest`` / ``latest`` left for the task, as Spark's
``KafkaSourceRDD.resolveRange`` leaves them."""
import json

import pytest

from devtools.services import create_topic
from streamslice.errors import DataLossError, PlanError
from streamslice.kafka.binding import bind, resolve
from streamslice.kafka.spark_options import EARLIEST, LATEST
from streamslice.kafka.split import KafkaSplit
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration

T0 = 1_714_521_600_000


@pytest.fixture
def topic(broker):
    """Offsets 0-9 at T0 + 0 s … 9 s on partition 0."""
    name = unique("binding")
    create_topic(broker.bootstrap, name, 1)
    with producer(broker.bootstrap) as p:
        for i in range(10):
            p.produce(name, value=str(i).encode(), partition=0, timestamp=T0 + i * 1000)
    return name


def split(topic, start, stop, fail_on_data_loss=True):
    return KafkaSplit(id=0, topic=topic, partition=0, start=EARLIEST, stop=LATEST,
                      unresolved={"start": start, "stop": stop, "no_match": "error",
                                  "fail_on_data_loss": fail_on_data_loss})


def props(broker):
    return {"bootstrap.servers": broker.bootstrap}


def test_timestamps_become_the_offsets_a_task_reads(broker, topic):
    [s] = resolve([split(topic, {"timestamp": T0 + 2500}, {"timestamp": T0 + 7000})],
                  props(broker))
    assert (s.start, s.stop, s.unresolved) == (3, 7, None)
    assert bind(s, props(broker)) is s  # nothing left for a task to look up again


def test_earliest_and_latest_stay_for_the_task(broker, topic):
    [s] = resolve([split(topic, {"offset": EARLIEST}, {"timestamp": T0 + 5000})], props(broker))
    assert s.unresolved is not None
    assert (s.unresolved["start"], s.unresolved["stop"]) == ({"offset": EARLIEST}, {"offset": 5})
    assert bind(s, props(broker)).offset_range == (0, 5)
    [s] = resolve([split(topic, {"timestamp": T0 + 4000}, {"offset": LATEST})], props(broker))
    assert s.unresolved is not None and s.unresolved["start"] == {"offset": 4}
    with producer(broker.bootstrap) as p:  # latest is where the log ends when a task reads
        p.produce(topic, value=b"10", partition=0, timestamp=T0 + 10_000)
    assert bind(s, props(broker)).offset_range == (4, 11)


def test_an_ending_timestamp_without_a_record_is_latest(broker, topic):
    [s] = resolve([split(topic, {"offset": 2}, {"timestamp": T0 + 60_000})], props(broker))
    assert s.unresolved is not None and s.unresolved["stop"] == {"offset": LATEST}


def test_range_errors_are_raised_when_resolving(broker, topic):
    with pytest.raises(PlanError, match="The resolved start offset 8 is greater than the "
                                        f"resolved end offset 5 for topic {topic} partition 0"):
        resolve([split(topic, {"timestamp": T0 + 8000}, {"timestamp": T0 + 5000})],
                props(broker))
    with pytest.raises(PlanError, match=f"No offset matched from request of topic-partition "
                                        f"{topic}-0 and timestamp {T0 + 60_000}"):
        resolve([split(topic, {"timestamp": T0 + 60_000}, {"offset": LATEST})], props(broker))
    with pytest.raises(PlanError, match="ending offset 12 is beyond the latest offset 10"):
        resolve([split(topic, {"offset": 0}, {"offset": 12})], props(broker))


def test_expired_start_is_data_loss_unless_allowed(broker, topic):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(topic, 0, 4)]).values():
        f.result(30)
    with pytest.raises(DataLossError, match="records expired between offset 1 and 4"):
        resolve([split(topic, {"offset": 1}, {"offset": 6})], props(broker))
    [s] = resolve([split(topic, {"offset": 1}, {"offset": 6}, False)], props(broker))
    assert s.offset_range == (4, 6)


def test_a_spark_read_past_the_log_fails_when_spark_plans_it(spark, broker, topic):
    """Before any task: one line, no Python traceback, on the first action and the next."""
    df = (spark.read.format("streamslice-kafka").option("kafka.bootstrap.servers", broker.bootstrap)
          .option("assign", json.dumps({topic: [0]}))
          .option("startingOffsets", json.dumps({topic: {"0": 5}}))
          .option("endingOffsets", json.dumps({topic: {"0": 60}})).load())
    for _ in range(2):
        with pytest.raises(Exception) as failed:
            df.collect()
        text = str(failed.value)
        assert "Failed to generate Python data source read partitions: streamslice.errors." \
               f"PlanError: {topic}:0: ending offset 60 is beyond the latest offset 10" in text
        assert "Traceback" not in text and "stage failure" not in text, text
