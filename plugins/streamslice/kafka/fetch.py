"""Raw fetch loops over one offset range, one per client. The read hot path is confluent-kafka
(librdkafka); kafka-python is the fallback (``client: kafka-python``).

A fetcher yields ``RawBatch``es of records with ``start <= offset < stop`` and returns once the
consumer position reaches ``stop``. It never returns early: a log that ends before ``stop`` or a
range that expires mid-read is an error, not a short read.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import repeat
from operator import is_not
from typing import TYPE_CHECKING, Any

from ..errors import DataLossError, SourceError
from .msk_iam import confluent_conf

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..sources import Properties
    from .properties import ClientKwargs
    from .split import KafkaSplit


@dataclass
class RawBatch:
    offsets: list[int]
    timestamps: list[int]  # epoch ms
    timestamp_types: list[int]  # 0 CreateTime, 1 LogAppendTime (Spark's timestampType)
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[Any]  # per record: [(key, value)] or None


def fetch(client: str, split: KafkaSplit, properties: Properties,
          **kw: Any) -> Iterator[RawBatch]:
    fetcher: Callable[..., Iterator[RawBatch]] = \
        fetch_confluent if client == "confluent-kafka" else fetch_kafka_python
    return fetcher(split, properties, **kw)


def _expired(split: KafkaSplit, at: int, detail: str) -> DataLossError:
    return DataLossError(
        f"{split.key}: records expired while reading offsets [{split.start}, {split.stop}) "
        f"(at offset {at}: {detail}); the retention or a delete moved the log start",
        [{"key": split.key, "from": at, "to": None, "reason": "expired during read"}])


def _stalled(split: KafkaSplit, position: int, idle_s: float, servers: Any) -> SourceError:
    return SourceError(f"{split.key}: no records from {servers} for {idle_s:.0f}s at offset "
                       f"{position}, before the split's stop {split.stop}")


def fetch_confluent(split: KafkaSplit, properties: Properties, batch_size: int = 10_000,
                    idle_timeout_s: float = 60.0, unreachable_s: float = 10.0,
                    consumer_factory: Callable[[ClientKwargs], Any] | None = None
                    ) -> Iterator[RawBatch]:
    """``consumer_factory(conf)`` makes the consumer (default: confluent_kafka.Consumer)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    consumer_factory = consumer_factory or Consumer
    down: list[Any] = []  # librdkafka retries by itself; we only need to know when nothing answers
    conf: ClientKwargs = {"group.id": "streamslice-reader", "enable.auto.commit": False,
            "enable.auto.offset.store": False, "enable.partition.eof": True,
            "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
            "queued.min.messages": 200_000, "fetch.max.bytes": 64 * 1024 * 1024,
            "socket.connection.setup.timeout.ms": 10_000,
            "error_cb": lambda err: down.append(err) if err.code() in (
                KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT) else None}
    conf.update(confluent_conf(properties))
    servers = conf.get("bootstrap.servers")
    if split.start >= split.stop:
        return
    try:
        consumer = consumer_factory(conf)
    except KafkaException as exc:
        raise SourceError(f"{split.key}: cannot create Kafka consumer: {exc}") from None
    try:
        consumer.assign([TopicPartition(split.topic, split.partition, split.start)])
        position, stop, idle_since = split.start, split.stop, time.monotonic()
        eof, oor = KafkaError._PARTITION_EOF, (KafkaError._AUTO_OFFSET_RESET,
                                               KafkaError.OFFSET_OUT_OF_RANGE)
        while position < stop:
            # Never ask for more than the range holds: a consume waits for its whole count
            # (or the timeout), so the range's last, short batch would otherwise cost the
            # full timeout while librdkafka keeps fetching past the stop.
            msgs = consumer.consume(num_messages=min(batch_size, stop - position),
                                    timeout=0.5)
            if not msgs:
                idle = time.monotonic() - idle_since
                if down and idle > unreachable_s:
                    raise SourceError(f"{split.key}: cannot reach Kafka at {servers}: "
                                      f"{down[-1].str()}")
                if idle > idle_timeout_s:
                    raise _stalled(split, position, idle_timeout_s, servers)
                continue
            down.clear()
            idle_since = time.monotonic()
            at_end = False
            # Whole-batch column extraction: one C-level map per field, no per-record
            # Python frame (every message of a batch is of one type).
            message = type(msgs[0])
            if any(map(is_not, map(message.error, msgs), repeat(None))):
                msgs, at_end = _strip_errors(split, msgs, position, eof, oor)
            offsets = list(map(message.offset, msgs))
            if offsets and offsets[-1] >= stop:  # only the tail of a batch can pass the stop
                cut = next(i for i, o in enumerate(offsets) if o >= stop)
                msgs, offsets = msgs[:cut], offsets[:cut]
                at_end = True
            position = stop if at_end else (offsets[-1] + 1 if offsets else position)
            if not offsets:
                continue
            types, stamps = zip(*map(message.timestamp, msgs))
            batch = RawBatch(offsets, list(stamps), _spark_timestamp_types(types),
                             list(map(message.key, msgs)), list(map(message.value, msgs)),
                             list(map(message.headers, msgs)))
            del msgs  # freed now, not walked by the next garbage collection
            yield batch
    finally:
        consumer.close()


def _spark_timestamp_types(types: tuple[int, ...]) -> list[int]:
    """librdkafka's 0 (not available) / 1 (CreateTime) / 2 (LogAppendTime) as Spark's
    timestampType (-1 / 0 / 1); a topic's records usually all share one type."""
    first = types[0]
    if types.count(first) == len(types):
        return [first - 1] * len(types)
    return [t - 1 for t in types]


def _strip_errors(split: KafkaSplit, msgs: list[Any], position: int, eof: int,
                  oor: tuple[int, ...]) -> tuple[list[Any], bool]:
    """Messages before the first error, and whether the log ended at or past the stop."""
    for i, m in enumerate(msgs):
        err = m.error()
        if err is None:
            continue
        if err.code() == eof:
            if m.offset() >= split.stop:
                return msgs[:i], True
            raise SourceError(f"{split.key}: the log ends at offset {m.offset()}, before the "
                              f"split's stop {split.stop} (truncated since planning?)")
        if err.code() in oor:
            raise _expired(split, position, err.str())
        raise SourceError(f"{split.key}: fetch failed: {err.str()}")
    return msgs, False


def fetch_kafka_python(split: KafkaSplit, properties: Properties, batch_size: int = 10_000,
                       idle_timeout_s: float = 60.0) -> Iterator[RawBatch]:
    from kafka import TopicPartition as KTP
    from kafka.errors import KafkaError, OffsetOutOfRangeError

    from .admin import connect
    if split.start >= split.stop:
        return
    servers = properties.get("bootstrap.servers")
    consumer = connect(properties, what=f"{split.key}: ", auto_offset_reset="none")
    tp = KTP(split.topic, split.partition)
    try:
        consumer.assign([tp])
        consumer.seek(tp, split.start)
        position, stop, idle_since = split.start, split.stop, time.monotonic()
        while position < stop:
            try:
                got = consumer.poll(timeout_ms=500, max_records=batch_size).get(tp, [])
            except OffsetOutOfRangeError as exc:
                raise _expired(split, position, str(exc)) from None
            except KafkaError as exc:
                raise SourceError(f"{split.key}: fetch failed: {exc}") from None
            if not got:
                if consumer.position(tp) >= stop:
                    break
                if time.monotonic() - idle_since > idle_timeout_s:
                    raise _stalled(split, position, idle_timeout_s, servers)
                continue
            idle_since = time.monotonic()
            got = [r for r in got if r.offset < stop]
            if got:
                position = got[-1].offset + 1
                yield RawBatch([r.offset for r in got], [r.timestamp for r in got],
                               [r.timestamp_type for r in got], [r.key for r in got],
                               [r.value for r in got],
                               [list(r.headers) if r.headers else None for r in got])
            if consumer.position(tp) >= stop:
                break
    finally:
        consumer.close()
