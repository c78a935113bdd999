"""Binding a read given as Spark options where Spark's Kafka source binds each side.

A split planned from Spark options keeps its sides ``unresolved`` (``earliest``, ``latest``,
timestamps). When Spark plans the read's input partitions on the driver, ``resolve`` asks the
broker once: timestamps become the offsets they stand for (Spark's
``fetchSpecificTimestampBasedOffsets``, on its driver) and every range is checked against the
log as it is then, so a start after its end, expired records or a timestamp without a match
fail there, as one line. ``earliest`` (-2) and ``latest`` (-1) stay symbolic and a task binds
them (``bind``, Spark's ``KafkaSourceRDD.resolveRange``), so each action reads the topic as it
is when it runs; a split with neither is read exactly as resolved, also by a retried task."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import SourceError
from .ranges import bind_range, by_offset
from .spark_options import EARLIEST, LATEST

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from confluent_kafka import Consumer

    from ..sources import Properties
    from .split import KafkaSplit


def resolve(splits: list[KafkaSplit], properties: Properties) -> list[KafkaSplit]:
    """The splits with their timestamps looked up and their ranges checked (driver side)."""
    if not any(s.unresolved for s in splits):
        return splits
    with _consumer(properties, splits[0].key) as consumer:
        return [_resolve(consumer, s) if s.unresolved else s for s in splits]


def bind(split: KafkaSplit, properties: Properties) -> KafkaSplit:
    """The split with concrete offsets (the split itself when it has none to bind)."""
    if not split.unresolved:
        return split
    with _consumer(properties, split.key) as consumer:
        start, stop, low, high = _range(consumer, split)
    return replace(split, start=start, stop=stop, log_start=low, high_watermark=high,
                   unresolved=None)


def _resolve(consumer: Consumer, split: KafkaSplit) -> KafkaSplit:
    sides = split.unresolved
    assert sides is not None
    lookup = _lookup(consumer, split)
    start = by_offset(split.key, sides["start"], True, sides["no_match"], lookup)
    stop = by_offset(split.key, sides["stop"], False, sides["no_match"], lookup)
    first, last, low, high = _range(consumer, replace(
        split, unresolved={**sides, "start": start, "stop": stop}))
    if start["offset"] != EARLIEST and stop["offset"] != LATEST:  # nothing left to bind
        return replace(split, start=first, stop=last, log_start=low, high_watermark=high,
                       unresolved=None)
    return replace(split, unresolved={**sides, "start": start, "stop": stop})


def _range(consumer: Consumer, split: KafkaSplit) -> tuple[int, int, int, int]:
    from confluent_kafka import KafkaException, TopicPartition
    sides = split.unresolved
    assert sides is not None
    try:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(split.topic, split.partition), timeout=15)
        start, stop = bind_range(split.key, sides["start"], sides["stop"], low, high,
                                 no_match_policy=sides["no_match"],
                                 fail_on_data_loss=sides["fail_on_data_loss"],
                                 lookup=_lookup(consumer, split))
    except KafkaException as exc:
        raise SourceError(f"{split.key}: looking up offsets failed: {exc}") from None
    return start, stop, low, high


def _lookup(consumer: Consumer, split: KafkaSplit) -> Callable[[int], int | None]:
    from confluent_kafka import KafkaException, TopicPartition

    def lookup(ms: int) -> int | None:
        try:
            found = consumer.offsets_for_times(
                [TopicPartition(split.topic, split.partition, ms)], timeout=15)[0].offset
        except KafkaException as exc:
            raise SourceError(f"{split.key}: looking up offsets failed: {exc}") from None
        return int(found) if found >= 0 else None
    return lookup


@contextmanager
def _consumer(properties: Properties, key: str) -> Iterator[Consumer]:
    """A confluent-kafka consumer for offset look-ups, closed on leaving."""
    from confluent_kafka import Consumer, KafkaException

    from .msk_iam import confluent_conf
    conf = {**confluent_conf(properties), "enable.auto.commit": False,
            "socket.connection.setup.timeout.ms": properties.get(
                "socket.connection.setup.timeout.ms", 10_000)}
    conf.setdefault("group.id", "streamslice-reader")
    try:
        consumer = Consumer(conf)
    except KafkaException as exc:
        raise SourceError(f"{key}: cannot create Kafka consumer: {exc}") from None
    try:
        yield consumer
    finally:
        consumer.close()
