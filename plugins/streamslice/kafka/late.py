"""Late binding: a split planned from Spark options keeps ``earliest``, ``latest`` and
timestamps unresolved until a task reads it, as Spark's Kafka source resolves them per
execution (``KafkaSourceRDD.resolveRange``). Each action on a DataFrame therefore reads the
topic as it is when the action runs."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import DataLossError, PlanError, SourceError
from .options import EARLIEST, LATEST
from .spark_read import check_range, lost, no_match

if TYPE_CHECKING:
    from .split import KafkaSplit


def bind(split: KafkaSplit, properties: dict[str, Any]) -> KafkaSplit:
    """The split with concrete offsets (the split itself when it has none to bind)."""
    if not split.late:
        return split
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    late = split.late
    conf = {**properties, "enable.auto.commit": False,
            "socket.connection.setup.timeout.ms": properties.get(
                "socket.connection.setup.timeout.ms", 10_000)}
    conf.setdefault("group.id", "streamslice-reader")
    try:
        consumer = Consumer(conf)
    except KafkaException as exc:
        raise SourceError(f"{split.key}: cannot create Kafka consumer: {exc}") from None
    tp = TopicPartition(split.topic, split.partition)
    try:
        low, high = consumer.get_watermark_offsets(tp, timeout=15)

        def at(spec: dict[str, int], starting: bool) -> int:
            if "offset" in spec:
                off = spec["offset"]
                return low if off == EARLIEST else high if off == LATEST else off
            found = consumer.offsets_for_times(
                [TopicPartition(split.topic, split.partition, spec["timestamp"])],
                timeout=15)[0].offset
            if found < 0:
                if starting and late["no_match"] == "error":
                    raise PlanError(no_match(split.key, spec["timestamp"]))
                return high
            return int(found)

        start, stop = at(late["start"], True), at(late["stop"], False)
    except KafkaException as exc:
        raise SourceError(f"{split.key}: looking up offsets failed: {exc}") from None
    finally:
        consumer.close()
    if start < low:
        if late["fail_on_data_loss"]:
            raise DataLossError(lost(split.key, start, low))
        start = low
    check_range(split.key, start, stop, high)
    return replace(split, start=start, stop=stop, log_start=low, high_watermark=high, late=None)
