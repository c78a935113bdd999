"""The Kinesis split reader: fetch (polling or EFO) → de-aggregate → decode → Arrow batches,
on the shared loop (``reading.loop``); the summary carries MillisBehindLatest."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..planning.bounds import classify_event_time
from ..reading.decode import TS, Decoder
from ..reading.loop import SplitReader
from ..sources import ReaderFactory
from .client import make_client
from .deaggregate import deaggregate
from .efo import subscribe
from .polling import PollingSettings, ShardRead, arrival_ms, poll

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..monitoring.lineage import DatasetName
    from ..planning.plan import Interval, ReadPlan
    from ..reading.staging import Staging
    from ..reading.stats import SplitSummary
    from ..records import JsonObject
    from ..sources import Properties, ReadRequest
    from .client import Record
    from .split import KinesisSplit

_META = [("stream", pa.string()), ("shardId", pa.string()), ("sequenceNumber", pa.string()),
         ("subSequenceNumber", pa.int64()), ("partitionKey", pa.string()),
         ("approximateArrivalTimestamp", TS)]


def record_schema(decoder: Decoder, event_time: bool = False) -> pa.Schema:
    """Columns as Spark's Kinesis connectors name them; json values become top-level fields;
    with an event-time field, the ``is_late`` and ``is_early`` flags."""
    flags = [pa.field("is_late", pa.bool_()), pa.field("is_early", pa.bool_())]
    return pa.schema([*decoder.value_fields("data"), *_META, *(flags if event_time else [])])


DEAD_LETTER_SCHEMA = pa.schema([("data", pa.binary()), *_META, ("error", pa.string())])


class KinesisReaders(ReaderFactory["KinesisSplit"]):
    """Kinesis' readers, for executors that have the plan: its ``source_info`` holds the
    region, endpoint, polling settings and (registration none) the EFO consumers."""

    raw_columns = ("data",)
    verify_columns = (("stream", "shardId"), None)

    def record_schema(self, decoder: Decoder, plan: ReadPlan[KinesisSplit]) -> pa.Schema:
        return record_schema(decoder, bool(plan.interval and plan.interval.event_time))

    def open_reader(self, split: KinesisSplit, request: ReadRequest) -> KinesisSplitReader:
        info = request.plan.source_info  # region and endpoint are not secrets: the plan has them
        props = {**{k: info[k] for k in ("region", "endpoint_url") if info.get(k)},
                 **request.properties}
        arns = request.options.get("consumer_arns") or info.get("consumer_arns") or {}
        arn = arns.get(split.stream)
        if arn is None and info.get("consumer_name") and split.stream_arn:
            from .spark_stream import registered_consumer  # a readStream query's consumer
            arn = registered_consumer(props, split.stream_arn, info["consumer_name"])
        return KinesisSplitReader(split, properties=props, decoder=request.decoder,
                                  staging=request.staging, fault=request.fault,
                                  settings=PollingSettings.from_dict(info.get("polling")),
                                  consumer_arn=arn,
                                  interval=request.plan.interval)

    def next_positions(self, plan: ReadPlan[KinesisSplit], summaries: dict[int, SplitSummary],
                       base: dict[str, Any]) -> dict[str, Any]:
        """What the readers saw, not the plan (``checkpoint.next_positions``)."""
        from .next_positions import next_positions
        return next_positions(plan, summaries, base)

    def source_state(self, plan: ReadPlan[KinesisSplit]) -> dict[str, Any]:
        """The initial position the plan resolved: later shards (children, new ones) start
        there, in every later run."""
        initial = plan.source_info.get("initial_position")
        return {"initial_position": initial} if initial else {}

    def lineage_dataset(self, plan: ReadPlan[KinesisSplit], split: KinesisSplit) -> DatasetName:
        from ..monitoring.lineage import kinesis_dataset
        return kinesis_dataset(split.stream_arn or plan.source_info["streams"][split.stream])


class KinesisSplitReader(SplitReader["KinesisSplit"]):
    dead_letter_schema = DEAD_LETTER_SCHEMA

    def __init__(self, split: KinesisSplit, *, properties: Properties | None = None,
                 decoder: Decoder | None = None, staging: Staging | None = None,
                 settings: PollingSettings | None = None, consumer_arn: str | None = None,
                 client: Any = None, fault: str | None = None,
                 interval: Interval | None = None) -> None:
        super().__init__(split, decoder=decoder or Decoder(), staging=staging, fault=fault)
        self.settings = settings or PollingSettings()
        self.consumer_arn = consumer_arn
        self.client = client or make_client(properties, utc_timestamps=True)
        self.interval = interval if interval is not None and interval.event_time else None
        self.event_time = self.interval.event_time if self.interval is not None else None
        self.schema = record_schema(self.decoder, self.event_time is not None)
        self.state = ShardRead()
        self._progress: int | None = None  # the highest arrival time read so far

    def fetch(self) -> Iterable[list[Record]]:
        if self.consumer_arn:
            return subscribe(self.client, self.split, self.consumer_arn, self.settings,
                             self.state)
        return poll(self.client, self.split, self.settings, self.state)

    def positions(self, raw: list[Record]) -> list[str]:
        return [r["SequenceNumber"] for r in raw]

    def summary_extra(self) -> JsonObject:
        s = self.state
        return {"finished": s.finished, "last_seq": s.last_seq, "lag": s.millis_behind_first,
                "millis_behind_latest": s.millis_behind_first,
                "millis_behind_latest_end": s.millis_behind_last, "calls": s.calls,
                "expired_iterators": s.expired_iterators, "resubscriptions": s.resubscriptions,
                "reader": "efo" if self.consumer_arn else "polling"}

    def to_arrow(self, raw: list[Record]) -> pa.RecordBatch:
        rows = []  # (seq, sub, key, arrival, data)
        for r in raw:
            arrival = arrival_ms(r)
            for sub, key, data in deaggregate(r["Data"], r["PartitionKey"]):
                rows.append((r["SequenceNumber"], sub, key, arrival, data))
        seqs, subs, keys, arrivals, datas = (list(c) for c in zip(*rows)) if rows else \
            ([], [], [], [], [])
        value_cols, errors = self.decoder.decode_values(datas)
        if self.event_time is not None:
            return self._by_event_time(seqs, subs, keys, arrivals, datas, value_cols, errors)
        if errors:
            bad, good = self.failed_rows(errors, len(rows),
                                         lambda row: f"sequence number {seqs[row]}")
            self.dead_letters(pa.RecordBatch.from_arrays(
                [pa.array([datas[i] for i in bad], pa.binary()),
                 *self._meta([seqs[i] for i in bad], [subs[i] for i in bad],
                             [keys[i] for i in bad], [arrivals[i] for i in bad]),
                 pa.array([errors[i] for i in bad], pa.string())], schema=DEAD_LETTER_SCHEMA))
            seqs, subs, keys, arrivals = ([c[i] for i in good] for c in (seqs, subs, keys,
                                                                          arrivals))
            good_idx = pa.array(good, pa.int64())
            value_cols = [c.take(good_idx) for c in value_cols]
        values = value_cols
        meta = self._meta(seqs, subs, keys, arrivals)
        self.stats.kept(seqs, pa.array(arrivals, pa.int64()), None,
                        sum(a.nbytes for a in values))
        return pa.RecordBatch.from_arrays([*values, *meta], schema=self.schema)

    def _by_event_time(self, seqs: list[str], subs: list[int | None], keys: list[str],
                       arrivals: list[int], datas: list[bytes], value_cols: list[pa.Array],
                       errors: dict[int, str]) -> pa.RecordBatch:
        """The records this run owns by the time in their field (``classify_event_time``).
        A shard's position is its progress: the highest arrival time up to each record, as
        the read's start and stop (the first record that arrived at or after a time) see it;
        every record before this read's start arrived before all the times compared with."""
        assert self.event_time is not None and self.interval is not None
        n, iv = len(seqs), self.interval
        progress = []
        for a in arrivals:
            self._progress = a if self._progress is None else max(self._progress, a)
            progress.append(self._progress)
        event_ms, time_errors = self.event_time.extract(self.decoder, value_cols)
        errors = {**time_errors, **errors}
        if errors:
            failed = pa.array([i in errors for i in range(n)])
            event_ms = pc.if_else(failed, pa.scalar(None, pa.int64()), event_ms)
        marks = classify_event_time(event_ms, pa.array(progress, pa.int64()), iv, {
            "home_from": iv.start, "owned_until": iv.end,
            "late_from": iv.start + iv.allowed_lateness,
            "early_until": iv.end - iv.allowed_earliness})
        dead = pc.indices_nonzero(marks["dead"]).to_pylist()
        if dead:
            ours = {i: errors.get(i, f"event_time: field {self.event_time.field!r} is "
                                     "null or missing") for i in dead}
            bad, _ = self.failed_rows(ours, n, lambda row: f"sequence number {seqs[row]}")
            self.dead_letters(pa.RecordBatch.from_arrays(
                [pa.array([datas[i] for i in bad], pa.binary()),
                 *self._meta([seqs[i] for i in bad], [subs[i] for i in bad],
                             [keys[i] for i in bad], [arrivals[i] for i in bad]),
                 pa.array([ours[i] for i in bad], pa.string())], schema=DEAD_LETTER_SCHEMA))
        keep = pc.or_(marks["on_time"], pc.or_(marks["late"], marks["early"]))
        idx = pc.indices_nonzero(keep)
        self.stats.outside(n - len(idx) - len(dead))
        rows = idx.to_pylist()
        seqs, subs, keys, arrivals = ([c[i] for i in rows] for c in (seqs, subs, keys,
                                                                     arrivals))
        values = [c.take(idx) for c in value_cols]
        late, early = marks["late"].take(idx), marks["early"].take(idx)
        self.stats.kept(seqs, pa.array(arrivals, pa.int64()), late,
                        sum(a.nbytes for a in values), early)
        return pa.RecordBatch.from_arrays(
            [*values, *self._meta(seqs, subs, keys, arrivals), late, early],
            schema=self.schema)

    def _meta(self, seqs: list[str], subs: list[int | None], keys: list[str],
              arrivals: list[int]) -> list[pa.Array]:
        n = len(seqs)
        return [pa.array([self.split.stream] * n, pa.string()),
                pa.array([self.split.shard_id] * n, pa.string()),
                pa.array(seqs, pa.string()), pa.array(subs, pa.int64()),
                pa.array(keys, pa.string()),
                pa.array(arrivals, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(TS)]
