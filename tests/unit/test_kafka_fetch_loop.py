"""The confluent-kafka fetch loop against a scripted consumer (a fake standing in for
librdkafka, to cover our loop's own logic: stop handling, end-of-partition, expiry, stalls).
The real client against a real broker is covered by the integration tests."""
import pytest
from confluent_kafka import KafkaError

from streamslice.errors import DataLossError, SourceError
from streamslice.kafka.fetch import fetch_confluent
from streamslice.kafka.split import KafkaSplit


class Msg:
    def __init__(self, offset, error=None, timestamp_type=1):
        self._offset, self._error, self._type = offset, error, timestamp_type

    def offset(self):
        return self._offset

    def error(self):
        return self._error

    def timestamp(self):
        return (self._type, 1_000 + self._offset)

    def key(self):
        return None

    def value(self):
        return b"v%d" % self._offset

    def headers(self):
        return None


class ScriptedConsumer:
    """Returns one scripted batch per ``consume`` call (then nothing)."""

    def __init__(self, batches):
        self.batches, self.assigned, self.closed = list(batches), None, False

    def __call__(self, conf):
        self.conf = conf
        return self

    def assign(self, tps):
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in tps]

    def consume(self, num_messages, timeout):
        self.asked = [*getattr(self, "asked", []), num_messages]
        return self.batches.pop(0) if self.batches else []

    def close(self):
        self.closed = True


def run(split, batches, **kw):
    consumer = ScriptedConsumer(batches)
    out = list(fetch_confluent(split, {"bootstrap.servers": "b:1"},
                               consumer_factory=consumer, **kw))
    return out, consumer


def msgs(*offsets):
    return [Msg(o) for o in offsets]


def test_reads_exactly_the_range_and_cuts_the_tail():
    out, consumer = run(KafkaSplit(0, "t", 0, 3, 7), [msgs(3, 4), msgs(5, 6, 7, 8)])
    assert [o for b in out for o in b.offsets] == [3, 4, 5, 6]
    assert out[0].timestamps == [1003, 1004] and out[0].timestamp_types == [0, 0]
    assert consumer.assigned == [("t", 0, 3)] and consumer.closed
    assert consumer.conf["enable.auto.commit"] is False


def test_gaps_in_offsets_compacted_topics_end_at_the_stop():
    out, _ = run(KafkaSplit(0, "t", 0, 0, 10), [msgs(0, 4), [Msg(10, KafkaError(
        KafkaError._PARTITION_EOF))]])
    assert [o for b in out for o in b.offsets] == [0, 4]


def test_end_of_partition_before_the_stop_is_an_error():
    with pytest.raises(SourceError, match="the log ends at offset 5, before the split's stop 9"):
        run(KafkaSplit(0, "t", 0, 0, 9), [msgs(3, 4) + [Msg(5, KafkaError(
            KafkaError._PARTITION_EOF))]])


def test_offsets_out_of_range_mid_read_is_data_loss():
    with pytest.raises(DataLossError, match=r"t:0: records expired while reading offsets \[0, 9\)"):
        run(KafkaSplit(0, "t", 0, 0, 9), [msgs(0, 1), [Msg(2, KafkaError(
            KafkaError.OFFSET_OUT_OF_RANGE))]])


def test_a_stalled_partition_fails_instead_of_returning_short():
    with pytest.raises(SourceError, match="no records from b:1 for 0s at offset 2"):
        run(KafkaSplit(0, "t", 0, 0, 9), [msgs(0, 1)], idle_timeout_s=0.0)


def test_an_empty_range_never_opens_a_consumer():
    out, consumer = run(KafkaSplit(0, "t", 0, 5, 5), [msgs(5)])
    assert out == [] and consumer.assigned is None


def test_never_asks_for_more_records_than_the_range_holds():
    # librdkafka waits for a consume's whole count (or its timeout): asking for more than the
    # range holds would make every split's last batch wait out the timeout.
    _, consumer = run(KafkaSplit(0, "t", 0, 0, 25), [msgs(*range(10)), msgs(*range(10, 20)),
                                                    msgs(*range(20, 25))], batch_size=10)
    assert consumer.asked == [10, 10, 5]


def test_timestamp_types_as_spark_numbers_them():
    mixed = [Msg(0, timestamp_type=0), Msg(1, timestamp_type=1), Msg(2, timestamp_type=2)]
    out, _ = run(KafkaSplit(0, "t", 0, 0, 6), [mixed, [Msg(o, timestamp_type=2)
                                                       for o in (3, 4, 5)]])
    assert [b.timestamp_types for b in out] == [[-1, 0, 1], [1, 1, 1]]
    assert out[0].timestamps == [1000, 1001, 1002]
