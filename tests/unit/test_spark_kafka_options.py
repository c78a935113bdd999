"""Spark's Kafka batch options, parsed as Spark 4's KafkaSourceProvider does (option names,
defaults, precedence, refusals and their texts), and Spark's KafkaOffsetRangeCalculator.
Pure parsing: the same options against a real broker are in the integration tests."""
import json
import re

import pytest

from streamslice.errors import ConfigError
from streamslice.kafka.admin import TopicPartition
from streamslice.kafka.properties import kafka_python_kwargs
from streamslice.kafka.source import KafkaSource
from streamslice.kafka.spark_options import OPTIONS
from streamslice.kafka.spark_read import divide
from streamslice.kafka.subscriber import PartitionSet, TopicList, TopicPattern
from streamslice.spark.plan_options import check_names


def parse(**kw):
    opts = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}
    opts.update(kw)
    opts = {k.lower(): v for k, v in opts.items() if v is not None}
    return KafkaSource.from_options(opts)


def read(**kw):
    return parse(**kw)[0].spark


# "One of the following options must be specified for Kafka source: assign, subscribe,
# subscribePattern" (KafkaSourceProvider.validateGeneralOptions)
@pytest.mark.parametrize("given, message", [
    ({"subscribe": None}, "One of the following options must be specified for Kafka source"),
    ({"assign": '{"t": [0]}'}, "Only one of the following options can be specified"),
    ({"subscribe": " , "}, "No topics to subscribe to as specified value for option 'subscribe'"),
    ({"subscribe": None, "subscribePattern": " "}, "Pattern to subscribe is empty"),
    ({"subscribe": None, "assign": "t:0"}, "No topicpartitions to assign"),
    ({"subscribe": None, "assign": '{"t": ["x"]}'}, "must map to a list of partition numbers"),
])
def test_subscription_errors_as_spark_words_them(given, message):
    with pytest.raises(ConfigError, match=message):
        parse(**given)


def test_subscriptions():
    assert parse(subscribe="a, b")[0].subscriber == TopicList(("a", "b"))
    # subscribePattern is Java's Pattern.matcher(topic).find(): a search, not a full match
    assert parse(subscribe=None, subscribePattern="ord")[0].subscriber == \
        TopicPattern("ord", search=True)
    assert parse(subscribe=None, assign='{"t": [0, 2]}')[0].subscriber == \
        PartitionSet((TopicPartition("t", 0), TopicPartition("t", 2)))


def test_defaults_are_earliest_to_latest_without_headers_failing_on_data_loss():
    r = read()
    assert (r.start.kind, r.stop.kind) == ("earliest", "latest")
    assert (r.fail_on_data_loss, r.include_headers, r.no_match) == (True, False, "error")
    assert (r.min_partitions, r.max_records_per_partition) == (None, None)


def test_precedence_timestamp_then_by_timestamp_then_offsets():
    """getKafkaOffsetRangeLimit: the global timestamp wins, then the per-partition
    timestamps, then the offsets."""
    by_ts = json.dumps({"t": {"0": 5}})
    r = read(startingTimestamp="100", startingOffsetsByTimestamp=by_ts, startingOffsets="latest")
    assert (r.start.kind, r.start.timestamp) == ("timestamp", 100)
    r = read(startingOffsetsByTimestamp=by_ts, startingOffsets="latest")
    assert (r.start.kind, r.start.offsets) == ("timestamps", {"t:0": 5})
    r = read(endingOffsets=json.dumps({"t": {"0": -1, "1": 7}}))
    assert r.stop.offsets == {"t:0": -1, "t:1": 7}
    assert r.stop.for_partition("t:0") == {"offset": -1}
    assert read(startingOffsets=" EARLIEST ").start.kind == "earliest"  # trimmed, any case


@pytest.mark.parametrize("given, message", [
    ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries on Kafka"),
    ({"endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries on Kafka"),
    ({"startingOffsets": json.dumps({"t": {"0": -1}})},
     "startingOffsets for t-0 can't be latest for batch queries on Kafka"),
    ({"endingOffsets": json.dumps({"t": {"0": -2}})},
     "ending offset for t-0 can't be earliest for batch queries on Kafka"),
    ({"startingOffsets": json.dumps({"t": {"0": -3}})}, "t:0 = -3 is not allowed"),
    ({"startingOffsets": "{nope"}, "option startingOffsets is not valid JSON"),
    ({"startingOffsets": json.dumps({"t": {"0": "5"}})}, "must be whole numbers"),
    ({"startingTimestamp": "abc"}, "option startingTimestamp: 'abc' is not a timestamp in epoch"),
    ({"failOnDataLoss": "yes"}, "option failOnDataLoss: 'yes' is not a boolean"),
    ({"failOnDataLoss": "TRUE "}, "option failOnDataLoss: 'TRUE ' is not a boolean"),
    ({"includeHeaders": "1"}, "option includeHeaders: '1' is not a boolean"),
    ({"minPartitions": "0"}, "minPartitions must be positive"),
    ({"minPartitions": "two"}, "option minPartitions: 'two' is not a whole number"),
    ({"maxRecordsPerPartition": "-5"}, "maxRecordsPerPartition must be positive"),
    ({"startingOffsetsByTimestampStrategy": "skip"},
     "option startingOffsetsByTimestampStrategy: 'skip' is not one of: error, latest"),
])
def test_bad_values_fail_with_one_clear_line(given, message):
    with pytest.raises(ConfigError, match=message):
        parse(**given)


def test_strict_booleans_and_numbers():
    assert read(failOnDataLoss="FALSE").fail_on_data_loss is False  # Scala's toBoolean
    assert read(includeHeaders="true").include_headers is True
    assert read(minPartitions="12").min_partitions == 12
    assert read(startingOffsetsByTimestampStrategy="LATEST").no_match == "latest"


@pytest.mark.parametrize("prop, message", [
    ("auto.offset.reset", "Kafka option 'auto.offset.reset' is not supported. Instead set the "
                          "source option 'startingOffsets'"),
    ("key.deserializer", "Kafka option 'key.deserializer' is not supported as keys are "
                         "deserialized as byte arrays"),
    ("value.deserializer", "Kafka option 'value.deserializer' is not supported as values"),
    ("enable.auto.commit", "Kafka option 'enable.auto.commit' is not supported"),
    ("interceptor.classes", "Kafka option 'interceptor.classes' is not supported"),
])
def test_kafka_properties_spark_refuses(prop, message):
    with pytest.raises(ConfigError, match=message):
        parse(**{f"kafka.{prop}": "x"})


def test_java_client_properties_become_librdkafka_ones():
    src, props = parse(**{"kafka.receive.buffer.bytes": "65536",
                          "kafka.sasl.mechanism": "PLAIN", "kafka.group.id": "mine",
                          "kafka.metadata.max.age.ms": "500",
                          "kafka.sasl.jaas.config":
                              'org.apache.kafka.common.security.plain.PlainLoginModule '
                              'required username="u" password="p";'})
    assert props == {"bootstrap.servers": "b:9092", "socket.receive.buffer.bytes": "65536",
                     "sasl.mechanisms": "PLAIN", "group.id": "mine",
                     "metadata.max.age.ms": "500", "sasl.username": "u", "sasl.password": "p",
                     "isolation.level": "read_uncommitted"}  # Spark's default, not librdkafka's
    kafka_python_kwargs(props)  # planning accepts every one of them
    with pytest.raises(ConfigError, match="Option 'kafka.bootstrap.servers' must be specified"):
        KafkaSource.from_options({"subscribe": "t"})


@pytest.mark.parametrize("name, hint", [
    ("startingoffset", "did you mean startingOffsets?"),
    ("failondatalos", "did you mean failOnDataLoss?"),
    ("includeheader", "did you mean includeHeaders?"),
])
def test_unknown_options_name_the_closest(name, hint):
    with pytest.raises(ConfigError, match=re.escape(f"unknown option '{name}' for "
                                                    f"streamslice-kafka ({hint})")):
        check_names({name: "x"}, "kafka", OPTIONS, "kafka.")
    check_names({"kafka.anything": "x", "startingoffsets": "earliest", "valueformat": "raw"},
                "kafka", OPTIONS, "kafka.")


def rng(tp, lo, hi):
    return (tp, lo, hi)


@pytest.mark.parametrize("ranges, min_parts, max_records, expected", [
    # KafkaOffsetRangeCalculatorSuite: "N TopicPartitions to more offset ranges"
    ([rng("t1", 1, 5)], 3, None, [("t1", 1, 2), ("t1", 2, 3), ("t1", 3, 5)]),
    # enough partitions already: unchanged, empty ranges dropped
    ([rng("t1", 1, 5), rng("t2", 3, 3), rng("t3", 0, 2)], 2, None,
     [("t1", 1, 5), ("t3", 0, 2)]),
    # small ranges stay whole, the large one takes the remaining partitions
    ([rng("t1", 0, 100), rng("t2", 0, 1)], 4, None,
     [("t1", 0, 33), ("t1", 33, 66), ("t1", 66, 100), ("t2", 0, 1)]),
    # maxRecordsPerPartition: ceil(size / max) parts, last one takes the remainder
    ([rng("t1", 0, 5)], None, 2, [("t1", 0, 1), ("t1", 1, 3), ("t1", 3, 5)]),
])
def test_spark_range_division(ranges, min_parts, max_records, expected):
    from streamslice.kafka.spark_options import Side, SparkRead
    r = SparkRead(Side("earliest"), Side("latest"), min_partitions=min_parts,
                  max_records_per_partition=max_records)
    assert divide(ranges, r) == expected


def bare(**kw):
    """The options alone, without kafka.bootstrap.servers or a subscription, as Spark's
    KafkaRelationSuite "bad batch query options" gives them."""
    return KafkaSource.from_options({k.lower(): v for k, v in kw.items()})


# Spark's validateBatchOptions order: starting side, ending side, then the general options
# (strategy, minPartitions, maxRecordsPerPartition, refused properties, bootstrap servers),
# then checkOffsetLimitValidity; the first that fails is the one reported.
@pytest.mark.parametrize("given, message", [
    ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"startingOffsets": json.dumps({"t": {"0": -1}}), "endingOffsets": "earliest"},
     "startingOffsets for t-0 can't be latest"),
    ({"endingOffsets": "earliest", "subscribe": "t", "assign": "x"},
     "ending offset can't be earliest for batch queries"),
    ({}, "One of the following options must be specified for Kafka source"),
    ({"subscribe": "t", "subscribePattern": "t.*"}, "Only one of the following options"),
    ({"assign": ""}, "No topicpartitions to assign as specified value for option 'assign' is ''"),
    ({"subscribe": ""}, "No topics to subscribe to"),
    ({"subscribePattern": ""}, "Pattern to subscribe is empty"),
    ({"subscribe": "t", "minPartitions": "0"}, "minPartitions must be positive"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "x"},
     "Kafka option 'auto.offset.reset' is not supported"),
    ({"subscribe": "t"}, "Option 'kafka.bootstrap.servers' must be specified"),
])
def test_batch_options_are_checked_in_sparks_order_before_the_bootstrap_servers(given, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        bare(**given)


@pytest.mark.parametrize("start, end, message", [
    ({"0": 1, "1": 1, "2": 1}, {"0": 0, "1": 0},
     "The specified start offset and end offset should have the same topic-partitions. "
     "Topic-partitions for start offset: Set(test-0, test-1, test-2), topic-partitions for "
     "end offset: Set(test-0, test-1)."),
    ({"0": 1, "1": 1, "2": 1}, {"0": 0, "1": 0, "2": 0},
     "The specified start offset 1 is greater than the end offset 0 for topic test "
     "partition 0."),
])
def test_check_offset_limit_validity(start, end, message):
    """KafkaRelationSuite: "topic-partition for start offset and end offset must match",
    "unresolved start offset greater than end offset"; checked after the bootstrap servers
    and before any broker is asked."""
    opts = {"kafka.bootstrap.servers": "b:9092", "subscribe": "test",
            "startingOffsets": json.dumps({"test": start}),
            "endingOffsets": json.dumps({"test": end})}
    with pytest.raises(ConfigError, match=re.escape(message)):
        bare(**opts)
    # -2 and -1 are not compared; by-timestamp sides are compared as timestamps
    bare(**{**opts, "startingOffsets": json.dumps({"test": {"0": -2}}),
            "endingOffsets": json.dumps({"test": {"0": -1}})})
    with pytest.raises(ConfigError, match="The specified start timestamp 9 is greater than "
                                          "the end timestamp 5 for topic test partition 0."):
        bare(**{**opts, "startingOffsetsByTimestamp": json.dumps({"test": {"0": 9}}),
                "endingOffsetsByTimestamp": json.dumps({"test": {"0": 5}})})
