"""Spark's Kafka streaming source (``KafkaMicroBatchStream``) over streamslice's Kafka
readers: the options a ``spark.readStream`` query gives, its offsets, its read limits and the
ranges of each micro-batch, with Spark's semantics, defaults and error texts. No PySpark
imports: ``spark.stream`` is the glue.

Offsets are Spark's ``KafkaSourceOffset`` JSON, ``{"topic": {"0": 23}}``: the next offset of
each partition, kept in the query's checkpoint by Spark. A batch's ranges are read by the batch
readers (``KafkaSplit``), so a stream and a batch read decode the same records the same way.

Where this differs from Spark: the starting offsets are not written to a log of their own
(Spark's ``KafkaSourceInitialOffsetWriter``; a Python source is not told the checkpoint
location), so a query with ``startingOffsets`` ``latest`` or a timestamp that is stopped before
its first batch is in the offset log resolves them again when it starts again.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.data_source_options import boolean, positive
from ..errors import ConfigError, DataLossError, PlanError
from .ranges import no_match
from .spark_options import (
    EARLIEST,
    LATEST,
    Side,
    SparkRead,
    choice,
    kafka_properties,
    side,
    spark_tp,
    subscriber,
)

if TYPE_CHECKING:
    from ..records import JsonObject
    from ..sources import Properties
    from .admin import KafkaAdmin, TopicPartition
    from .source import KafkaSource
    from .split import KafkaSplit

Offsets = dict[str, int]  # "topic:partition" → next offset

log = logging.getLogger("streamslice")
DEFAULT_MAX_TRIGGER_DELAY = "15m"
STREAM_REFUSED = {"endingoffsets": "ending offset not valid in streaming queries",
                  "endingoffsetsbytimestamp": "ending timestamp not valid in streaming queries",
                  "endingtimestamp": "ending timestamp not valid in streaming queries"}
DATA_LOSS = ("Some data may have been lost because they are not available in Kafka any more; "
             "either the data was aged out by Kafka or the topic may have been deleted before "
             "all the data in the topic was processed. If you don't want your streaming query "
             "to fail on such cases, set the source option failOnDataLoss to false. Reason: ")
SKIPPED = ("Some data may have been lost because they are not available in Kafka any more; "
           "either the data was aged out by Kafka or the topic may have been deleted before "
           "all the data in the topic was processed. If you want your streaming query to fail "
           "on such cases, set the source option \"failOnDataLoss\" to \"true\".")
_TIME = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
            "d": 86_400_000}


@dataclass(frozen=True)
class Limits:
    """``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and ``maxTriggerDelay`` (ms)."""

    max_offsets: int | None = None
    min_offsets: int | None = None
    max_delay_ms: int = 15 * 60_000


def stream_from_options(opts: dict[str, str]) -> tuple[KafkaSource, dict[str, Any], Limits]:
    """``opts`` has lower-cased keys. A streaming query's options in Spark's order
    (``validateStreamOptions``): the ending options are refused, then the general ones are
    checked as for a batch read; the start defaults to ``latest``. Returns the KafkaSource,
    the client properties and the read limits."""
    for name, message in STREAM_REFUSED.items():
        if name in opts:
            raise ConfigError(message)
    start = side(opts, "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets",
                 "latest")
    no_match_policy = choice(opts, "startingOffsetsByTimestampStrategy", ("error", "latest"),
                             "error")
    subscription = subscriber(opts)
    positive(opts, "minPartitions")
    positive(opts, "maxRecordsPerPartition")
    props = kafka_properties(opts)
    limits = Limits(positive(opts, "maxOffsetsPerTrigger"), positive(opts, "minOffsetsPerTrigger"),
                    time_ms(opts.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY),
                            "maxTriggerDelay"))
    if limits.min_offsets and limits.max_offsets and limits.min_offsets > limits.max_offsets:
        raise ConfigError(f"The value of minOffsetPerTrigger({limits.min_offsets}) is higher "
                          f"than the maxOffsetsPerTrigger({limits.max_offsets}).")
    fail = boolean(opts, "failOnDataLoss", True)
    read = SparkRead(start=start, stop=Side("latest", option="latest"),
                     no_match=no_match_policy,  # type: ignore[arg-type]
                     fail_on_data_loss=fail, include_headers=boolean(opts, "includeHeaders", False))
    from .source import KafkaSource
    source = KafkaSource(
        subscriber=subscription, start=None, stop=None,
        bootstrap_servers=props["bootstrap.servers"],
        properties={k: v for k, v in props.items() if k != "bootstrap.servers"},
        client=choice(opts, "client", ("confluent-kafka", "kafka-python"),  # type: ignore[arg-type]
                      "confluent-kafka"),
        on_data_loss="fail" if fail else "skip", spark=read)
    return source, props, limits


def time_ms(text: str, name: str) -> int:
    """Spark's ``Utils.timeStringAsMs``: a number of ms, or with a unit (``30s``, ``15m``)."""
    found = _TIME.match(text)
    if not found:
        raise ConfigError(f"option {name}: {text!r} is not a time (e.g. 500ms, 30s, 15m)")
    return int(int(found.group(1)) * _UNIT_MS[(found.group(2) or "ms").lower()])


def from_spark(offset: JsonObject) -> Offsets:
    """Spark's offset JSON (``{"topic": {"p": offset}}``) → ``{"topic:p": offset}``."""
    out: Offsets = {}
    for topic, parts in offset.items():
        if not isinstance(parts, dict):
            raise PlanError(f"Spark offset of topic {topic!r}: {parts!r} is not an object of "
                            "partition → offset")
        for p, off in parts.items():
            if not p.isdigit() or isinstance(off, bool) or not isinstance(off, int):
                raise PlanError(f"Spark offset of {topic}:{p}: {off!r} is not an offset")
            out[f"{topic}:{int(p)}"] = off
    return out


def to_spark(offsets: Offsets) -> JsonObject:
    """``{"topic:p": offset}`` → Spark's offset JSON, topics and partitions in order (Spark
    compares a batch's offsets as JSON text)."""
    out: dict[str, JsonObject] = {}
    for key in sorted(offsets, key=_order):
        topic, _, part = key.rpartition(":")
        out.setdefault(topic, {})[part] = offsets[key]
    return {topic: parts for topic, parts in out.items()}


def _order(key: str) -> tuple[str, int]:
    topic, _, part = key.rpartition(":")
    return topic, int(part)


def rate_limit(limit: int, start: Offsets, until: Offsets, earliest: Offsets) -> Offsets:
    """Spark's ``rateLimit``: ``limit`` records shared among the partitions in proportion to
    what each has waiting, a partition with a share below one record still getting one.
    ``earliest`` holds the start of partitions ``start`` does not have yet."""
    sizes = {}
    for key, end in until.items():
        begin = start.get(key, earliest.get(key))
        if begin is not None and end - begin > 0:
            sizes[key] = end - begin
    total = sum(sizes.values())
    if total < 1:
        return dict(until)
    out = {}
    for key, end in until.items():
        if key not in sizes:
            out[key] = end
            continue
        share = limit * (sizes[key] / total)
        whole = int(-(-share // 1)) if share < 1 else int(share)
        out[key] = min(end, start.get(key, earliest.get(key, 0)) + whole)
    return out


class KafkaStream:
    """One streaming query's offsets (the driver side of ``KafkaMicroBatchStream``), made
    anew in every Python worker that needs it: it connects only when first asked for offsets,
    so Spark can ship it to the executors, whose tasks read with the batch readers."""

    def __init__(self, source: KafkaSource, properties: Properties, limits: Limits) -> None:
        self.source, self.properties, self.limits = source, properties, limits
        assert source.spark is not None
        self.read = source.spark
        # what the batches' plan says of the source (``ReadPlan.source_info``)
        self.info = {"bootstrap_servers": source.bootstrap_servers, "client": source.client,
                     "include_headers": self.read.include_headers}
        self.available_now: Offsets | None = None  # the end, fixed by Trigger.AvailableNow
        self.triggered_now = False
        self.latest: Offsets | None = None
        self.last_trigger_ms = 0.0
        self._admin: KafkaAdmin | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_admin": None}

    # -- Spark's DataSourceStreamReader: offsets as Spark's JSON ----------------------------
    def initial_offset(self) -> JsonObject:
        return to_spark(self.initial())

    def latest_offset(self, start: JsonObject, all_available: bool) -> JsonObject:
        return to_spark(self.next_end(from_spark(start), all_available))

    def report_latest(self) -> JsonObject | None:
        return to_spark(self.latest) if self.latest else None

    def batch_splits(self, start: JsonObject, end: JsonObject) -> list[KafkaSplit]:
        return self.splits(from_spark(start), from_spark(end))

    # -- the same in streamslice's terms ----------------------------------------------------
    def initial(self) -> Offsets:
        """Where the query starts (``startingOffsets`` and its timestamp forms)."""
        tps = self._partitions()
        start = self.read.start
        if start.kind == "earliest":
            return self._keyed(self.admin().beginning_offsets(tps))
        if start.kind == "latest":
            return self._keyed(self.admin().end_offsets(tps))
        from .spark_read import check_covers
        check_covers(start, [tp.key for tp in tps])
        if start.kind == "offsets":
            return self._specific(tps, start)
        return self._by_time(tps, start)

    def prepare_available_now(self) -> None:
        self.triggered_now = True

    def next_end(self, start: Offsets, all_available: bool) -> Offsets:
        """The end of the next batch: the latest offsets (fixed at the first call under
        Trigger.AvailableNow), held back by ``minOffsetsPerTrigger`` until
        ``maxTriggerDelay`` and cut to ``maxOffsetsPerTrigger``, unless the trigger asks for
        all that is available (Trigger.Once)."""
        if self.triggered_now and self.available_now is None:
            self.available_now = self._latest()
        latest = self.available_now if self.available_now is not None else self._latest()
        self.latest = latest
        if all_available:
            return latest
        if self.limits.min_offsets and self.available_now is None and \
                self._delay(self.limits.min_offsets, latest, start):
            return dict(start)
        if self.limits.max_offsets:
            new = [k for k in latest if k not in start]
            earliest = self._keyed(self.admin().beginning_offsets(
                [_tp(k) for k in new])) if new else {}
            return rate_limit(self.limits.max_offsets, start, latest, earliest)
        return latest

    def _delay(self, minimum: int, latest: Offsets, start: Offsets) -> bool:
        """Spark's ``delayBatch``: hold the batch back while fewer than ``minimum`` records
        wait and ``maxTriggerDelay`` has not passed since the last batch."""
        now = time.time() * 1000
        if now - self.last_trigger_ms >= self.limits.max_delay_ms:
            self.last_trigger_ms = now
            return False
        waiting = sum(off - start.get(key, 0) for key, off in latest.items())
        if waiting < minimum:
            return True
        self.last_trigger_ms = now
        return False

    def splits(self, start: Offsets, end: Offsets) -> list[KafkaSplit]:
        """The batch's ranges as splits (Spark's ``getOffsetRangesFromResolvedOffsets``):
        partitions new since ``start`` from their earliest offset, data loss reported as
        ``failOnDataLoss`` says, empty ranges left out."""
        from .split import KafkaSplit
        new = [k for k in end if k not in start]
        admin = self.admin() if end else None
        earliest = self._keyed(admin.beginning_offsets([_tp(k) for k in new])) \
            if admin and new else {}
        for key in new:
            if key not in earliest:
                self._loss(f"Cannot find initial offsets for partitions {spark_tp(key)}. "
                           "They may have been deleted.")
            elif earliest[key] != 0:
                self._loss(f"Added partition {spark_tp(key)} starts from {earliest[key]} "
                           "instead of 0.")
        gone = sorted(k for k in start if k not in end)
        if gone:
            self._loss(f"Partitions {_tp_set(gone)} have been deleted.")
        froms = {**start, **earliest}
        keys = sorted((k for k in end if k in froms), key=_order)
        low = self._keyed(admin.beginning_offsets([_tp(k) for k in keys])) if admin and keys \
            else {}
        splits: list[KafkaSplit] = []
        for key in keys:
            first, last = froms[key], end[key]
            if last < first:
                self._loss(f"Partition {spark_tp(key)} offset was changed from {first} to "
                           f"{last}.")
                continue
            if first < low.get(key, first):
                self._loss(f"Could not read records in offset [{first}, {low[key]}) for topic "
                           f"partition {spark_tp(key)}.")
                first = low[key]
            if last > first:
                topic, _, part = key.rpartition(":")
                splits.append(KafkaSplit(id=len(splits), topic=topic, partition=int(part),
                                         start=first, stop=last, log_start=low.get(key, 0),
                                         high_watermark=last))
        return splits

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- the broker -------------------------------------------------------------------------
    def admin(self) -> KafkaAdmin:
        if self._admin is None:
            from .admin import KafkaAdmin
            self._admin = KafkaAdmin(self.properties)
        return self._admin

    def _partitions(self) -> list[TopicPartition]:
        """The partitions subscribed now, metadata asked afresh (partitions and topics added
        while the query runs are found): ``assign``'s as given; a topic not there yet has
        none, as Spark's subscription waits for it."""
        from .subscriber import PartitionSet, TopicList, TopicPattern
        admin = self.admin()
        topics = admin.topics()  # a metadata request: new partitions show up after it
        sub = self.source.subscriber
        if isinstance(sub, PartitionSet):
            return list(sub.assigned)
        if isinstance(sub, TopicPattern):
            names = [t for t in topics if re.search(sub.pattern, t)]
        else:
            assert isinstance(sub, TopicList)
            names = [t for t in sub.topics if t in topics]
        return [tp for topic in sorted(names) for tp in admin.partitions(topic)]

    def _latest(self) -> Offsets:
        return self._keyed(self.admin().end_offsets(self._partitions()))

    def _specific(self, tps: list[TopicPartition], start: Side) -> Offsets:
        """Spark's ``fetchSpecificOffsets``: -2 earliest, -1 latest, an offset before the log
        start is data loss (the query starts at the log start when that is allowed)."""
        low, high = self.admin().beginning_offsets(tps), self.admin().end_offsets(tps)
        out = {}
        for tp in tps:
            off = start.offsets[tp.key]
            at = low[tp] if off == EARLIEST else high[tp] if off == LATEST else off
            if 0 <= off < low[tp]:
                self._loss(f"Starting offset for {spark_tp(tp.key)} was {off} but consumer "
                           f"reset to {low[tp]}.")
                at = low[tp]
            out[tp.key] = at
        return out

    def _by_time(self, tps: list[TopicPartition], start: Side) -> Offsets:
        """``startingTimestamp`` / ``startingOffsetsByTimestamp``: the first offset at or
        after the time; none there fails, or is the latest offset with the strategy
        ``latest``."""
        admin = self.admin()
        out = {}
        for tp in tps:
            ms = start.timestamp if start.kind == "timestamp" else start.offsets[tp.key]
            assert ms is not None
            found = admin.offsets_for_times({tp: ms}, ends={tp: None})[tp]
            if found is None:
                if self.read.no_match == "error":
                    from ..errors import PlanError
                    raise PlanError(no_match(tp.key, ms))
                found = admin.end_offsets([tp])[tp]
            out[tp.key] = int(found)
        return out

    def _loss(self, reason: str) -> None:
        if self.read.fail_on_data_loss:
            raise DataLossError(DATA_LOSS + reason)
        log.warning("%s %s", reason, SKIPPED)

    @staticmethod
    def _keyed(offsets: dict[TopicPartition, int]) -> Offsets:
        return {tp.key: int(off) for tp, off in offsets.items()}


def _tp(key: str) -> TopicPartition:
    from .admin import TopicPartition
    return TopicPartition.parse(key)


def _tp_set(keys: list[str]) -> str:
    return f"Set({', '.join(spark_tp(k) for k in keys)})"


__all__ = ["KafkaStream", "Limits", "from_spark", "rate_limit", "stream_from_options",
           "to_spark"]
