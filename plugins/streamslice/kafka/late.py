"""Late binding: a split planned from Spark options keeps ``earliest``, ``latest`` and
timestamps unresolved until a task reads it, as Spark's Kafka source resolves them per
execution (``KafkaSourceRDD.resolveRange``). Each action on a DataFrame therefore reads the
topic as it is when the action runs."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .ranges import bind_range

if TYPE_CHECKING:
    from .split import KafkaSplit


def bind(split: KafkaSplit, properties: dict[str, Any]) -> KafkaSplit:
    """The split with concrete offsets (the split itself when it has none to bind)."""
    if not split.late:
        return split
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    late = split.late
    from .msk_iam import confluent_conf
    conf = {**confluent_conf(properties), "enable.auto.commit": False,
            "socket.connection.setup.timeout.ms": properties.get(
                "socket.connection.setup.timeout.ms", 10_000)}
    conf.setdefault("group.id", "streamslice-reader")
    try:
        consumer = Consumer(conf)
    except KafkaException as exc:
        raise SourceError(f"{split.key}: cannot create Kafka consumer: {exc}") from None
    tp = TopicPartition(split.topic, split.partition)

    def lookup(ms: int) -> int | None:
        found = consumer.offsets_for_times(
            [TopicPartition(split.topic, split.partition, ms)], timeout=15)[0].offset
        return int(found) if found >= 0 else None

    try:
        low, high = consumer.get_watermark_offsets(tp, timeout=15)
        start, stop = bind_range(split.key, late["start"], late["stop"], low, high,
                                 no_match_policy=late["no_match"],
                                 fail_on_data_loss=late["fail_on_data_loss"], lookup=lookup)
    except KafkaException as exc:
        raise SourceError(f"{split.key}: looking up offsets failed: {exc}") from None
    finally:
        consumer.close()
    return replace(split, start=start, stop=stop, log_start=low, high_watermark=high, late=None)
