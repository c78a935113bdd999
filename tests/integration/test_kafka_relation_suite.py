"""Spark's own batch-source cases, one test per test of Spark 4's ``KafkaRelationSuite``
(connector/kafka-0-10-sql), named after it and run the way it runs them, against
``format("streamslice-kafka")``, the real broker and Spark: the same rows, and for a bad read
Spark's error text, raised where Spark raises it (options: when the DataFrame is defined,
before any broker is asked, without a Python traceback in the message). The transactional
cases run on the broker's transactions: Spark reads read_uncommitted unless
``kafka.isolation.level`` says otherwise."""
import json
from contextlib import contextmanager

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.services import create_topic
from tests.support import kafka
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


def send(broker, topic, values, partition=None, timestamp=None):
    kafka.send(broker.bootstrap, topic, values, partition, timestamp)


def new_topic(broker, partitions=3):
    name = unique("relation")
    create_topic(broker.bootstrap, name, partitions)
    return name


def three_partitions(broker):
    """0-9 on partition 0, 10-19 on 1, 20 on 2, as most of Spark's cases start."""
    topic = new_topic(broker)
    send(broker, topic, range(0, 10), 0)
    send(broker, topic, range(10, 20), 1)
    send(broker, topic, [20], 2)
    return topic


def reader(spark, broker, topic=None, **options):
    r = spark.read.format("streamslice-kafka")
    if broker is not None:
        r = r.option("kafka.bootstrap.servers", broker.bootstrap)
    if topic is not None:
        r = r.option("subscribe", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r


def values(df):
    return sorted(int(r.v) for r in df.selectExpr("CAST(value AS STRING) AS v").collect())


def offsets(topic, by_partition):
    return json.dumps({topic: {str(p): o for p, o in by_partition.items()}})


def test_explicit_earliest_to_latest_offsets(spark, broker):
    topic = three_partitions(broker)
    df = reader(spark, broker, topic, startingOffsets="earliest", endingOffsets="latest").load()
    assert values(df) == list(range(21))
    send(broker, topic, range(21, 30), 2)  # "latest" binds late, to the offset of the query
    assert values(df) == list(range(30))


def test_default_starting_and_ending_offsets(spark, broker):
    topic = three_partitions(broker)
    assert values(reader(spark, broker, topic).load()) == list(range(21))


def test_explicit_offsets(spark, broker):
    topic = three_partitions(broker)
    df = reader(spark, broker, topic, startingOffsets=offsets(topic, {0: -2, 1: -2, 2: 0}),
                endingOffsets=offsets(topic, {0: -1, 1: -1, 2: 1})).load()
    assert values(df) == list(range(21))
    send(broker, topic, range(31, 40), 2)  # partition 2 ends at offset 1: nothing changes
    assert values(df) == list(range(21))
    send(broker, topic, range(21, 31), 1)  # partition 1 ends at latest: it grows
    assert values(df) == list(range(31))


def test_default_starting_and_ending_offsets_with_headers(spark, broker):
    topic = new_topic(broker)
    with producer(broker.bootstrap) as p:
        p.produce(topic, value=b"1", partition=0)
        p.produce(topic, value=b"2", partition=1, headers=[("a", b"b"), ("c", b"d")])
        p.produce(topic, value=b"3", partition=2, headers=[("e", b"f"), ("e", b"g")])
    df = reader(spark, broker, topic, includeHeaders="true").load() \
        .selectExpr("CAST(value AS STRING) AS v", "headers")
    got = {r.v: [(h.key, h.value) for h in r.headers] if r.headers else r.headers
           for r in df.collect()}
    assert got == {"1": None, "2": [("a", b"b"), ("c", b"d")], "3": [("e", b"f"), ("e", b"g")]}


@pytest.fixture
def stamped(broker):
    """Spark's ``prepareTimestampRelatedUnitTest``: 0-9, 10-19 and 20-29 spread over three
    partitions (value % 3) at three timestamps a second apart; → (topic, [t1, t2, t3, t4])."""
    topic = new_topic(broker)
    first = 1_714_521_600_000
    stamps = [first, first + 1000, first + 2000, first + 3000]
    for block, ts in zip((range(0, 10), range(10, 20), range(20, 30)), stamps):
        for part in range(3):
            send(broker, topic, [v for v in block if v % 3 == part], part, ts)
    return topic, stamps


def by_timestamp(topic, stamp_of):
    return json.dumps({topic: {str(p): stamp_of(p) for p in range(3)}})


def test_timestamp_provided_for_starting_and_ending(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic,
                startingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[1]),
                endingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[2])).load()
    assert values(df) == list(range(10, 20))


def test_timestamp_provided_for_starting_offset_provided_for_ending(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic,
                startingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[0]),
                endingOffsets=offsets(topic, {0: -1, 1: -1, 2: 1})).load()
    assert values(df) == sorted([v for v in range(30) if v % 3 != 2] + [2])


def test_timestamp_provided_for_ending_offset_provided_for_starting(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic, startingOffsets=offsets(topic, {0: -2, 1: -2, 2: 0}),
                endingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[2])).load()
    assert values(df) == list(range(20))


def test_timestamp_provided_for_starting_ending_not_provided(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic,
                startingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[1])).load()
    assert values(df) == list(range(10, 30))


def test_timestamp_provided_for_ending_starting_not_provided(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic,
                endingOffsetsByTimestamp=by_timestamp(topic, lambda p: ts[2])).load()
    assert values(df) == list(range(20))


def test_global_timestamp_provided_for_starting_and_ending(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic, startingTimestamp=str(ts[1]),
                endingTimestamp=str(ts[2])).load()
    assert values(df) == list(range(10, 20))


def test_no_matched_offset_for_timestamp_startingOffsets(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic, startingOffsetsByTimestamp=by_timestamp(
        topic, lambda p: ts[1] if p < 2 else 2 ** 63 - 1)).load()
    planning_fails(df, f"No offset matched from request of topic-partition {topic}-2 and "
                       f"timestamp {2 ** 63 - 1}")


def test_preferences_on_offset_related_options(spark, broker, stamped):
    topic, ts = stamped
    second = by_timestamp(topic, lambda p: ts[1])
    df = reader(spark, broker, topic, startingTimestamp=str(ts[2]),
                startingOffsetsByTimestamp=second, startingOffsets="earliest").load()
    assert values(df) == list(range(20, 30))
    df = reader(spark, broker, topic, startingOffsetsByTimestamp=second,
                startingOffsets="earliest").load()
    assert values(df) == list(range(10, 30))


def test_no_matched_offset_for_timestamp_endingOffsets(spark, broker, stamped):
    topic, ts = stamped
    df = reader(spark, broker, topic, endingOffsetsByTimestamp=by_timestamp(
        topic, lambda p: ts[1] if p < 2 else 2 ** 63 - 1)).load()
    assert values(df) == sorted(list(range(10)) + [v for v in range(10, 30) if v % 3 == 2])


def test_reuse_same_dataframe_in_query(spark, broker):
    topic = new_topic(broker, 1)
    send(broker, topic, range(11), 0)
    df = reader(spark, broker, topic, startingOffsets="earliest", endingOffsets="latest").load()
    assert values(df.union(df)) == sorted(list(range(11)) * 2)


def test_test_late_binding_start_offsets(spark, broker):
    """Spark empties the log through retention; here the records are deleted up to the end
    (DeleteRecords), which moves the log start the same way."""
    topic = new_topic(broker, 1)
    send(broker, topic, range(10), 0)
    df = reader(spark, broker, topic, startingOffsets="earliest", endingOffsets="latest").load()
    assert values(df) == list(range(10))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(topic, 0, 10)]).values():
        f.result(30)
    send(broker, topic, range(10, 20), 0)
    assert values(df) == list(range(10, 20))


def bad_options(spark, *messages, **options):
    """Spark's ``testBadOptions``: the options alone (no broker address), failing when the
    DataFrame is defined, each expected text in the message (any case), and no traceback."""
    with pytest.raises(Exception) as failed:
        reader(spark, None, **options).load().collect()
    text = str(failed.value)
    for message in messages:
        assert message.lower() in text.lower(), text
    assert "Traceback" not in text, text


def test_bad_batch_query_options(spark):
    bad_options(spark, "starting offset can't be latest for batch queries on Kafka",
                startingOffsets="latest")
    bad_options(spark, "startingOffsets for t-0 can't be latest for batch queries on Kafka",
                subscribe="t", startingOffsets=json.dumps({"t": {"0": -1}}))
    bad_options(spark, "ending offset can't be earliest for batch queries on Kafka",
                endingOffsets="earliest")
    bad_options(spark, "ending offset for t-0 can't be earliest for batch queries on Kafka",
                subscribe="t", endingOffsets=json.dumps({"t": {"0": -2}}))
    bad_options(spark, "options must be specified", "subscribe", "subscribePattern")
    bad_options(spark, "only one", "options can be specified", subscribe="t",
                subscribePattern="t.*")
    bad_options(spark, "only one", "options can be specified", subscribe="t",
                assign='{"a":[0]}')
    bad_options(spark, "no topicpartitions to assign", assign="")
    bad_options(spark, "no topics to subscribe", subscribe="")
    bad_options(spark, "pattern to subscribe is empty", subscribePattern="")


def test_SPARK_30656_minPartitions(spark, broker):
    topic = three_partitions(broker)
    df = reader(spark, broker, topic, minPartitions="6").load()
    assert df.rdd.getNumPartitions() >= 6
    assert values(df) == list(range(21))


def test_topic_partition_for_start_offset_and_end_offset_must_match(spark, broker):
    """Topic "test" is never asked for: the options fail first."""
    with pytest.raises(Exception) as failed:
        reader(spark, broker, "test", startingOffsets='{"test": {"0": 1, "1": 1, "2": 1}}',
               endingOffsets='{"test": {"0": 0, "1": 0}}').load().collect()
    text = str(failed.value)
    assert "The specified start offset and end offset should have the same " \
           "topic-partitions." in text and "Traceback" not in text


def test_unresolved_start_offset_greater_than_end_offset(spark, broker):
    with pytest.raises(Exception) as failed:
        reader(spark, broker, "test", startingOffsets='{"test": {"0": 1, "1": 1, "2": 1}}',
               endingOffsets='{"test": {"0": 0, "1": 0, "2": 0}}').load().collect()
    text = str(failed.value)
    assert "The specified start offset 1 is greater than the end offset 0 for" in text
    assert "Traceback" not in text


def test_resolved_start_offset_greater_than_end_offset_without_latest(spark, broker):
    topic = new_topic(broker)
    stamps = []
    for part in range(3):
        with producer(broker.bootstrap) as p:
            p.produce(topic, value=b"0", partition=part, timestamp=1_714_521_600_000 + part)
            p.produce(topic, value=b"0", partition=part, timestamp=1_714_521_601_000 + part)
        stamps.append(1_714_521_601_000 + part)
    df = reader(spark, broker, topic, startingOffsets=offsets(topic, {0: 3, 1: 3, 2: 3}),
                endingOffsetsByTimestamp=json.dumps(
                    {topic: {str(p): stamps[p] for p in range(3)}})).load()
    planning_fails(df, "The resolved start offset 3 is greater than the resolved end offset "
                       "1 for topic")


def test_resolved_start_offset_greater_than_end_offset_with_latest(spark, broker):
    topic = new_topic(broker)
    df = reader(spark, broker, topic,
                startingOffsets=offsets(topic, {0: 1, 1: 1, 2: 1})).load()
    planning_fails(df, "The resolved start offset 1 is greater than the resolved end offset "
                       "0 for topic")


def planning_fails(df, message):
    """Spark resolves the offsets on its driver and fails there (KafkaOffsetReader): here
    when Spark plans the input partitions, before any task runs, as one line without a
    Python traceback, and again on the next action."""
    for _ in range(2):
        with pytest.raises(Exception) as failed:
            df.collect()
        text = str(failed.value)
        assert message in text, text
        assert "Failed to generate Python data source read partitions" in text, text
        assert "Traceback" not in text and "stage failure" not in text, text


@contextmanager
def transactional_producer(broker):
    """Spark's ``withTransactionalProducer``: a producer with a transactional id, ready, and
    closed when the block ends."""
    with producer(broker.bootstrap, **{"transactional.id": unique("tx")}) as p:
        p.init_transactions(30)
        yield p


def in_transaction(p, topic, values, commit):
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=str(v).encode())
    p.flush(30)
    if commit is not None:
        (p.commit_transaction if commit else p.abort_transaction)(30)


def test_read_Kafka_transactional_messages_read_committed(spark, broker):
    topic = new_topic(broker, 1)
    with transactional_producer(broker) as p:
        read_committed(spark, broker, topic, p)


def read_committed(spark, broker, topic, p):
    df = reader(spark, broker, topic, **{"kafka.isolation.level": "read_committed"}).load()
    in_transaction(p, topic, range(1, 6), commit=None)
    assert values(df) == []  # nothing before it is committed
    p.commit_transaction(30)
    assert values(df) == list(range(1, 6))
    in_transaction(p, topic, range(6, 11), commit=False)
    assert values(df) == list(range(1, 6))  # aborted records are not read
    in_transaction(p, topic, range(11, 16), commit=True)
    assert values(df) == [*range(1, 6), *range(11, 16)]


@pytest.mark.parametrize("isolation", ["read_uncommitted", None])
def test_read_Kafka_transactional_messages_read_uncommitted(spark, broker, isolation):
    """Spark reads read_uncommitted unless told otherwise (librdkafka's own default is
    read_committed): ``None`` is the option left out."""
    topic = new_topic(broker, 1)
    options = {"kafka.isolation.level": isolation} if isolation else {}
    with transactional_producer(broker) as p:
        read_uncommitted(reader(spark, broker, topic, **options).load(), topic, p)


def read_uncommitted(df, topic, p):
    in_transaction(p, topic, range(1, 6), commit=None)
    assert values(df) == list(range(1, 6))  # uncommitted records are read
    p.commit_transaction(30)
    assert values(df) == list(range(1, 6))
    in_transaction(p, topic, range(6, 11), commit=False)
    assert values(df) == list(range(1, 11))  # and aborted ones
    in_transaction(p, topic, range(11, 16), commit=True)
    assert values(df) == list(range(1, 16))
