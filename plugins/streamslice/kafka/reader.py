"""The Kafka split reader: fetch (confluent-kafka or kafka-python) → keep what the run owns →
decode → Arrow record batches, on the shared loop (``reading.loop``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..planning.bounds import classify, classify_event_time
from ..reading.decode import TS, Decoder
from ..reading.loop import SplitReader
from ..sources import ReaderFactory
from .fetch import RawBatch, fetch

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..monitoring.lineage import DatasetName
    from ..planning.plan import Interval, ReadPlan
    from ..reading.staging import Staging
    from ..sources import Properties, ReadRequest
    from .split import KafkaSplit

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_META = [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
         ("timestamp", TS), ("timestampType", pa.int32())]


def record_schema(decoder: Decoder, interval_mode: bool,
                  include_headers: bool = True, event_time: bool = False) -> pa.Schema:
    """Columns as Spark's Kafka source names them; json values become top-level fields;
    ``headers`` as with Spark's ``includeHeaders``; ``is_early`` with an event-time field."""
    fields = [*decoder.key_fields(), *decoder.value_fields(), *_META]
    if include_headers:
        fields.append(pa.field("headers", HEADERS))
    if interval_mode:
        fields.append(pa.field("is_late", pa.bool_()))
    if event_time:
        fields.append(pa.field("is_early", pa.bool_()))
    return pa.schema(fields)


DEAD_LETTER_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), *_META,
                                ("headers", HEADERS), ("error", pa.string())])


class KafkaReaders(ReaderFactory["KafkaSplit"]):
    """Kafka's readers, for executors that have the plan: its ``source_info`` says the
    client and whether records carry headers."""

    raw_columns = ("key", "value")
    verify_columns = (("topic", "partition"), "offset")

    def record_schema(self, decoder: Decoder, plan: ReadPlan[KafkaSplit]) -> pa.Schema:
        return record_schema(decoder, plan.mode == "interval",
                             plan.source_info.get("include_headers", True),
                             bool(plan.interval and plan.interval.event_time))

    def open_reader(self, split: KafkaSplit, request: ReadRequest) -> KafkaSplitReader:
        client = request.options.get("client") or request.plan.source_info.get("client")
        properties = request.properties
        if "isolation.level" in request.options:  # a read given as Spark's options
            properties = {"isolation.level": request.options["isolation.level"], **properties}
        return KafkaSplitReader(split, properties=properties,
                                client=client or "confluent-kafka", decoder=request.decoder,
                                interval=request.plan.interval, staging=request.staging,
                                fault=request.fault,
                                include_headers=request.plan.source_info.get("include_headers",
                                                                             True))

    def spark_read_options(self, options: dict[str, str]) -> dict[str, Any]:
        """A Spark user may choose the client beside a plan (``.option("client", …)``). A
        read given as Spark's options (no ``plan``) reads ``read_uncommitted`` unless
        ``kafka.isolation.level`` says otherwise, as Spark's consumers do (librdkafka's own
        default is read_committed, which a DAG's plan keeps)."""
        out = {"client": options["client"]} if "client" in options else {}
        if "plan" not in options:
            out["isolation.level"] = options.get("kafka.isolation.level", "read_uncommitted")
        return out

    def resolve_splits(self, splits: list[KafkaSplit],
                       properties: Callable[[], Properties]) -> list[KafkaSplit]:
        """A Spark read's timestamps become offsets and its ranges are checked
        (``kafka.binding``)."""
        if not any(s.unresolved for s in splits):
            return splits
        from .binding import resolve
        return resolve(splits, properties())

    def lineage_dataset(self, plan: ReadPlan[KafkaSplit], split: KafkaSplit) -> DatasetName:
        from ..monitoring.lineage import kafka_dataset
        return kafka_dataset(plan.source_info["bootstrap_servers"], split.topic)


class KafkaSplitReader(SplitReader["KafkaSplit"]):
    dead_letter_schema = DEAD_LETTER_SCHEMA

    def __init__(self, split: KafkaSplit, *, properties: Properties,
                 client: str = "confluent-kafka", decoder: Decoder | None = None,
                 interval: Interval | None = None, staging: Staging | None = None,
                 batch_size: int = 10_000, idle_timeout_s: float = 60.0,
                 fault: str | None = None, include_headers: bool = True) -> None:
        super().__init__(split, decoder=decoder or Decoder(), staging=staging, fault=fault)
        self.properties, self.client, self.interval = properties, client, interval
        self.batch_size, self.idle_timeout_s = batch_size, idle_timeout_s
        self.event_time = interval.event_time if interval is not None else None
        self.schema = record_schema(self.decoder, interval is not None, include_headers,
                                    self.event_time is not None)
        self.include_headers = include_headers

    def fetch(self) -> Iterable[RawBatch]:
        if self.split.unresolved:  # Spark-option reads bind earliest/latest now
            from .binding import bind
            self.split = bind(self.split, self.properties)
            self.stats.note(start=self.split.start, stop=self.split.stop)
        return fetch(self.client, self.split, self.properties, batch_size=self.batch_size,
                     idle_timeout_s=self.idle_timeout_s)

    def positions(self, raw: RawBatch) -> list[int]:
        return raw.offsets

    def to_arrow(self, raw: RawBatch) -> pa.RecordBatch:
        n = len(raw.offsets)
        offsets = _offsets(raw.offsets)
        ts = pa.array(raw.timestamps, pa.int64())
        cols: dict[str, Any] = {"offset": offsets, "timestamp": ts,
                                "timestampType": _same_or_array(raw.timestamp_types,
                                                                pa.int32()),
                                "key": raw.keys, "value": raw.values, "headers": raw.headers}
        if self.event_time is not None:
            return self._by_event_time(cols, offsets, ts)
        late = None
        if self.interval is not None:
            at = self.split.interval_offsets("late_from", "owned_until")
            on_time, late_mask = classify(ts, offsets, self.interval, at["late_from"],
                                          at["owned_until"])
            keep = pc.or_(on_time, late_mask)
            kept = pc.sum(keep).as_py() or 0
            if kept != n:
                kept_idx = pc.indices_nonzero(keep).to_pylist()
                cols = _take(cols, kept_idx)
                offsets, ts = cols["offset"], cols["timestamp"]
                late_mask = late_mask.take(pa.array(kept_idx, pa.int64()))
            late = late_mask
            self.stats.outside(n - kept)
        key_cols, key_errors = self.decoder.decode_keys(cols["key"], cols["headers"])
        value_cols, value_errors = self.decoder.decode_values(cols["value"], cols["headers"])
        errors = {**value_errors, **key_errors}
        if errors:
            bad, good = self.failed_rows(errors, len(offsets),
                                         lambda row: f"offset {offsets[row].as_py()}")
            self.dead_letters(self._dead_letters(cols, offsets, ts, errors, bad))
            good_idx = pa.array(good, pa.int64())
            key_cols = [c.take(good_idx) for c in key_cols]
            value_cols = [c.take(good_idx) for c in value_cols]
            cols = _take(cols, good)
            offsets, ts = cols["offset"], cols["timestamp"]
            if late is not None:
                late = late.take(good_idx)
        arrays = [*key_cols, *value_cols]
        payload = _bytes(arrays)
        count = len(offsets)
        arrays += [pa.repeat(pa.scalar(self.split.topic, pa.string()), count),
                   pa.repeat(pa.scalar(self.split.partition, pa.int32()), count),
                   offsets, _ts(ts), cols["timestampType"]]
        if self.include_headers:
            arrays.append(_headers(cols["headers"]))
        if late is not None:
            arrays.append(late)
        self.stats.kept(offsets, ts, late, payload)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _by_event_time(self, cols: dict[str, Any], offsets: pa.Array,
                       ts: pa.Array) -> pa.RecordBatch:
        """The records this run owns by the time in their field (``classify_event_time``):
        every record of the read range is decoded, since its field says who owns it; one
        that does not decode, or has no usable time, is a dead letter of its home run."""
        assert self.event_time is not None and self.interval is not None
        n = len(offsets)
        key_cols, key_errors = self.decoder.decode_keys(cols["key"], cols["headers"])
        value_cols, value_errors = self.decoder.decode_values(cols["value"], cols["headers"])
        event_ms, time_errors = self.event_time.extract(self.decoder, value_cols)
        errors = {**time_errors, **value_errors, **key_errors}
        if errors:
            failed = pa.array([i in errors for i in range(n)])
            event_ms = pc.if_else(failed, pa.scalar(None, pa.int64()), event_ms)
        marks = classify_event_time(event_ms, offsets, self.interval, self.split.interval_offsets(
            "home_from", "owned_until", "late_from", "early_until"))
        dead = pc.indices_nonzero(marks["dead"]).to_pylist()
        if dead:
            ours = {i: errors.get(i, f"event_time: field {self.event_time.field!r} is "
                                     "null or missing") for i in dead}
            bad, _ = self.failed_rows(ours, n, lambda row: f"offset {offsets[row].as_py()}")
            self.dead_letters(self._dead_letters(cols, offsets, ts, ours, bad))
        keep = pc.or_(marks["on_time"], pc.or_(marks["late"], marks["early"]))
        kept_idx = pc.indices_nonzero(keep)
        self.stats.outside(n - len(kept_idx) - len(dead))
        key_cols = [c.take(kept_idx) for c in key_cols]
        value_cols = [c.take(kept_idx) for c in value_cols]
        cols = _take(cols, kept_idx.to_pylist())
        offsets, ts = cols["offset"], cols["timestamp"]
        late, early = marks["late"].take(kept_idx), marks["early"].take(kept_idx)
        arrays = [*key_cols, *value_cols]
        payload = _bytes(arrays)
        count = len(offsets)
        arrays += [pa.repeat(pa.scalar(self.split.topic, pa.string()), count),
                   pa.repeat(pa.scalar(self.split.partition, pa.int32()), count),
                   offsets, _ts(ts), cols["timestampType"]]
        if self.include_headers:
            arrays.append(_headers(cols["headers"]))
        arrays += [late, early]
        self.stats.kept(offsets, ts, late, payload, early)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _dead_letters(self, cols: dict[str, Any], offsets: pa.Array, ts: pa.Array,
                      errors: dict[int, str], rows: list[int]) -> pa.RecordBatch:
        idx = pa.array(rows, pa.int64())
        return pa.RecordBatch.from_arrays([
            pa.array([cols["key"][i] for i in rows], pa.binary()),
            pa.array([cols["value"][i] for i in rows], pa.binary()),
            pa.array([self.split.topic] * len(rows), pa.string()),
            pa.array([self.split.partition] * len(rows), pa.int32()),
            offsets.take(idx), _ts(ts.take(idx)), cols["timestampType"].take(idx),
            pa.array([cols["headers"][i] for i in rows], HEADERS),
            pa.array([errors[i] for i in rows], pa.string())], schema=DEAD_LETTER_SCHEMA)


def _offsets(offsets: list[int]) -> pa.Array:
    """A partition's offsets strictly increase (the fetch loop relies on it too), so a batch
    without gaps is a range: built in C rather than converted record by record."""
    first, n = offsets[0], len(offsets)
    if offsets[-1] - first == n - 1:
        return pa.array(np.arange(first, first + n, dtype=np.int64))
    return pa.array(offsets, pa.int64())


def _same_or_array(values: list[Any], typ: pa.DataType) -> pa.Array:
    """A column whose values are usually all equal (a topic's timestamp type)."""
    if values.count(values[0]) == len(values):
        return pa.repeat(pa.scalar(values[0], typ), len(values))
    return pa.array(values, typ)


def _headers(headers: list[Any]) -> pa.Array:
    if headers.count(None) != len(headers):
        return pa.array(headers, HEADERS)
    return pa.nulls(len(headers), HEADERS)  # the common case: no headers at all


def _take(cols: dict[str, Any], idx: list[int]) -> dict[str, Any]:
    arr_idx = pa.array(idx, pa.int64())
    return {name: col.take(arr_idx) if isinstance(col, pa.Array) else [col[i] for i in idx]
            for name, col in cols.items()}


def _ts(ms_array: pa.Array) -> pa.Array:
    return ms_array.cast(pa.timestamp("ms", tz="UTC")).cast(TS)


def _bytes(arrays: list[pa.Array]) -> int:
    """Payload bytes of binary/string columns (decoded fields count by their Arrow size)."""
    total = 0
    for arr in arrays:
        if pa.types.is_binary(arr.type) or pa.types.is_string(arr.type):
            total += pc.sum(pc.binary_length(arr)).as_py() or 0
        else:
            total += arr.nbytes
    return total
