"""Does the local broker behave like Kafka where streamslice depends on it? Run at test start
so a broken broker fails loudly instead of making the product look wrong."""
from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from .services import create_topic


def check_broker(bootstrap: str) -> None:
    """Raise AssertionError naming the first behaviour that differs from Kafka."""
    topic = f"conformance-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    times = [1000, 3000, 2000, 5000, 4000]  # one batch, explicit out-of-order CreateTimes
    for i, ts in enumerate(times):
        producer.produce(topic, value=f"v{i}".encode(), partition=0, timestamp=ts)
    assert producer.flush(30) == 0, "producer could not deliver to the broker"

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "conformance",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "auto.offset.reset": "error"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (0, 5), f"watermarks {(low, high)}, expected (0, 5)"

        def at(ms: int) -> int:
            got = c.offsets_for_times([TopicPartition(topic, 0, ms)], timeout=10)[0]
            return got.offset

        for ms, want in ((0, 0), (2500, 1), (3000, 1), (4500, 3), (5000, 3)):
            assert at(ms) == want, f"offsets_for_times({ms}) gave {at(ms)}, expected {want}"
        assert at(5001) == -1, f"offsets_for_times past the end gave {at(5001)}, expected none"

        c.assign([TopicPartition(topic, 0, 2)])
        got = [m for m in c.consume(10, timeout=5) if m.error() is None]
        assert [m.offset() for m in got][:3] == [2, 3, 4], "fetch from the middle of a batch"
        assert [m.timestamp()[1] for m in got][:3] == [2000, 5000, 4000], "CreateTime lost"

        c.assign([TopicPartition(topic, 0, 50)])
        errors = [e for m in c.consume(5, timeout=5) if (e := m.error()) is not None]
        assert any(e.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
                   for e in errors), f"fetch past the end gave {errors}, not OffsetOutOfRange"
    finally:
        c.close()
