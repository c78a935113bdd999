"""A ``spark.readStream.format("streamslice-kinesis")`` query's offsets, read limits and
micro-batch ranges over streamslice's Kinesis readers (polling and Enhanced Fan-Out): the
driver side that ``spark.stream.PlanStreamReader`` asks. No PySpark imports.

Offsets (in the query's checkpoint, kept by Spark) are, per shard, where the next batch
starts: ``{"initial": <position>, "shards": {"stream:shardId": <position>}}`` where a position
is ``{"type": "TRIM_HORIZON"}``, ``{"type": "AT_TIMESTAMP", "timestamp": ms}`` or
``{"finished": true}`` (read to SHARD_END). A batch ends every open shard at a *cut*: the
first record that arrived at or after a time ``T`` (epoch ms), which is where the next batch
starts (AT_TIMESTAMP ``T``), so two batches never share or skip a record. Sequence numbers
are not in the offsets: the driver cannot know where a read ended before it ran. A closed
shard is read to its end in one batch (its content no longer changes); its children join
the batch after it, starting at the query's initial position (parents before children).

``T`` is this driver's clock when the batch is planned (under Trigger.AvailableNow, when the
query starts); the readers keep reading until the Kinesis server's clock has passed it
(``polling``'s clock rule), so a record that arrives before ``T`` by the server's clock is in
the batch. ``maxFetchRecordsPerShard`` moves a shard's cut back to hold at most that many
records: the driver reads ahead with GetRecords (sequence numbers and arrival times only)
and cuts between two records with different arrival times.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import DataLossError
from .client import DEFAULT_BACKOFF, call, make_client
from .planner import list_shards, parents_of, stream_names
from .polling import arrival_ms, stream_arn_arg, wall_ms
from .positions import NO_BOUND, AtTimestamp, PlanTime, Position, position_from_dict

if TYPE_CHECKING:
    from .source import KinesisSource
    from .split import KinesisSplit
    from .stream_options import StreamSettings

Offsets = dict[str, dict[str, Any]]  # "stream:shardId" → position dict or {"finished": true}
FINISHED: dict[str, Any] = {"finished": True}
log = logging.getLogger("streamslice")


class Shard:
    """One shard as ListShards shows it now."""

    def __init__(self, stream: str, arn: str, desc: dict[str, Any]) -> None:
        self.stream, self.arn, self.id = stream, arn, str(desc["ShardId"])
        self.parents = parents_of(desc)
        self.closed = "EndingSequenceNumber" in desc.get("SequenceNumberRange", {})

    @property
    def key(self) -> str:
        return f"{self.stream}:{self.id}"


class KinesisStream:
    """One query's offsets (made anew in each Python worker that needs it; it connects when
    first asked), and its EFO consumer: registered when the query first asks for offsets,
    deregistered when Spark stops the query (``efoRegistration`` per_run)."""

    def __init__(self, source: KinesisSource, properties: dict[str, Any],
                 settings: StreamSettings) -> None:
        self.source, self.properties, self.limits = source, properties, settings
        self.info: dict[str, Any] = {
            "reader": source.reader, "streams": {}, "region": properties.get("region"),
            "endpoint_url": properties.get("endpoint_url"),
            "polling": source.polling.to_dict()}
        if source.reader == "efo":
            if settings.registration == "none":
                self.info["consumer_arns"] = dict(source.efo_consumer_arns)
            else:
                self.info["consumer_name"] = settings.consumer_name
        self.available_now: int | None = None  # T fixed by Trigger.AvailableNow
        self.triggered_now = False
        self.behind: dict[str, int] = {}  # millisBehindLatest per shard, from read-ahead
        self.latest: Offsets | None = None
        self.registered: dict[str, str] = {}  # stream ARN → consumer name (this query's)
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    # -- Spark's DataSourceStreamReader ------------------------------------------------------
    def initial_offset(self) -> dict[str, Any]:
        """The configured start, resolved now (LATEST: AT_TIMESTAMP of now, so shards that
        appear later start at the same instant), for the shards without listed parents."""
        self._register()
        initial = self.source.start.resolve(PlanTime(wall_ms()))
        start = initial.to_dict()
        shards = self.shards()
        listed = {s.id for s in shards}
        return self._offset(start, {s.key: start for s in shards
                                    if not any(p in listed for p in s.parents)})

    def prepare_available_now(self) -> None:
        self.triggered_now = True

    def latest_offset(self, start: dict[str, Any], all_available: bool) -> dict[str, Any]:
        self._register()
        if self.triggered_now and self.available_now is None:
            self.available_now = wall_ms()
        cut = self.available_now if self.available_now is not None else wall_ms()
        limit = None if all_available else self.limits.max_fetch
        initial, before = start["initial"], start["shards"]
        shards = self.shards()
        listed = {s.id: s for s in shards}
        after: Offsets = {}
        for shard in shards:
            begin = before.get(shard.key)
            if begin is None:
                if any(p in listed and before.get(f"{shard.stream}:{p}") != FINISHED
                       for p in shard.parents):
                    continue  # a child waits until its parents are read to their end
                begin = initial
            after[shard.key] = begin if begin == FINISHED else \
                self._end(shard, begin, cut, limit)
        self._expired(before, after, listed)
        self.latest = after
        if self.available_now is not None and after == before:
            self.close()  # Trigger.AvailableNow reached its end: Spark stops, no read follows
        return self._offset(initial, after)

    def report_latest(self) -> dict[str, Any] | None:
        """The cut of the last planned batch, and how far behind the stream's tip the
        read-ahead found each shard (``millisBehindLatest``, when it read ahead)."""
        if self.latest is None:
            return None
        return {"shards": self.latest, "millisBehindLatest": dict(sorted(self.behind.items()))}

    def batch_splits(self, start: dict[str, Any], end: dict[str, Any]) -> list[KinesisSplit]:
        from .split import KinesisSplit
        splits: list[KinesisSplit] = []
        shards = {s.key: s for s in self.shards()}
        for key, stop in sorted(end["shards"].items()):
            begin = start["shards"].get(key, start["initial"])
            if begin == FINISHED or begin == stop:
                continue
            shard = shards.get(key)
            stream, _, shard_id = key.partition(":")
            splits.append(KinesisSplit(
                id=len(splits), stream=stream, shard_id=shard_id, start=begin,
                stop_before=NO_BOUND if stop == FINISHED else int(stop["timestamp"]),
                closed=stop == FINISHED, parents=shard.parents if shard else [],
                stream_arn=self.info["streams"].get(stream)))
        return splits

    def close(self) -> None:
        """The query ends: its consumers go (registration per_run). Spark stops the query's
        Python worker without waiting for it, so where the query is stopped (not run to an
        availableNow end) this is a best effort, as in the connector."""
        from .consumers import deregister
        if self.limits.registration == "per_run" and self.registered:
            for arn, name in sorted(self.registered.items()):
                deregister(self.client(), arn, name)
            self.registered = {}

    # -- Kinesis --------------------------------------------------------------------------
    def client(self) -> Any:
        if self._client is None:
            self._client = make_client(self.properties)
        return self._client

    def shards(self) -> list[Shard]:
        out = []
        for ref in self.source.streams:
            name, arn = stream_names(self.client(), ref)
            self.info["streams"][name] = arn
            out += [Shard(name, arn, s) for s in list_shards(self.client(), arn)]
        return out

    def _register(self) -> None:
        """Register (or reuse) the query's consumer and wait until it is ACTIVE, once."""
        name = self.limits.consumer_name
        if self.source.reader != "efo" or not name or self.registered:
            return
        from .consumers import register
        for ref in self.source.streams:
            arn = stream_names(self.client(), ref)[1]
            register(self.client(), arn, name)
            self.registered[arn] = name

    def _end(self, shard: Shard, begin: dict[str, Any], cut: int,
             limit: int | None) -> dict[str, Any]:
        """Where this batch ends the shard: its end (a closed shard), or the cut ``T``,
        moved back to hold at most ``limit`` records."""
        if begin.get("type") == "AT_TIMESTAMP" and not shard.closed:
            cut = max(cut, int(begin["timestamp"]))
        if limit is None:
            return FINISHED if shard.closed else AtTimestamp(cut).to_dict()
        found = read_ahead(self.client(), shard, position_from_dict(begin),
                           NO_BOUND if shard.closed else cut, limit)
        if found.behind is not None:
            self.behind[shard.key] = found.behind
        if found.cut is not None:
            return AtTimestamp(found.cut).to_dict()
        return FINISHED if shard.closed else AtTimestamp(cut).to_dict()

    def _expired(self, before: Offsets, after: Offsets, listed: dict[str, Shard]) -> None:
        """A shard the offsets have, not read to its end, that Kinesis no longer lists
        expired unread (``failOnDataLoss``, false as in the connector: logged)."""
        gone = sorted(k for k, v in before.items()
                      if v != FINISHED and k.partition(":")[2] not in listed)
        if not gone:
            return
        text = (f"shards {', '.join(gone)} expired before they were read to their end; "
                "records in them may have been lost")
        if self.limits.fail_on_data_loss:
            raise DataLossError(f"data loss: {text}. Set kinesis.failOnDataLoss false to go on.")
        log.warning("%s (kinesis.failOnDataLoss is false: the query goes on)", text)

    @staticmethod
    def _offset(initial: dict[str, Any], shards: Offsets) -> dict[str, Any]:
        return {"initial": initial, "shards": dict(sorted(shards.items()))}


class ReadAhead:
    """What the driver's read-ahead found: the earlier cut the limit needs (None: the batch
    may go to ``T`` or the shard's end), and MillisBehindLatest."""

    def __init__(self) -> None:
        self.cut: int | None = None
        self.behind: int | None = None


def read_ahead(client: Any, shard: Shard, begin: Position, bound: int,
               limit: int) -> ReadAhead:
    """Arrival times of up to ``limit + 1`` records from ``begin`` that arrived before
    ``bound``; with more than ``limit`` of them, the cut (``cut_at``)."""
    from .polling import iterator_args
    found = ReadAhead()
    backoff = DEFAULT_BACKOFF
    iterator = call(client.get_shard_iterator, f"GetShardIterator({shard.id})",
                    backoff["get_shard_iterator"],
                    **iterator_args(shard.arn, shard.id, begin))["ShardIterator"]
    times: list[int] = []
    while iterator and len(times) <= limit:
        resp = call(client.get_records, f"GetRecords({shard.id})", backoff["get_records"],
                    ShardIterator=iterator, Limit=min(10_000, limit + 1 - len(times)),
                    **stream_arn_arg(shard.arn))
        found.behind = resp.get("MillisBehindLatest", found.behind)
        records = resp.get("Records", [])
        for record in records:
            ms = arrival_ms(record)
            if ms >= bound:
                return found
            times.append(ms)
        iterator = resp.get("NextShardIterator")
        if not records and resp.get("MillisBehindLatest") == 0:
            break
    if len(times) > limit:
        found.cut = cut_at(times, limit)
    return found


def cut_at(times: list[int], limit: int) -> int | None:
    """The latest cut holding at most ``limit`` of these records (arrival times in sequence
    order): the arrival time of record ``k`` (0-based, ``k <= limit``) where every record
    before it arrived earlier, so "the first record at or after the cut" is record ``k``.
    None where there is no such place (all in one millisecond): the batch goes on to ``T``."""
    highest = [times[0]]
    for ms in times[1:]:
        highest.append(max(highest[-1], ms))
    for k in range(min(limit, len(times) - 1), 0, -1):
        if times[k] > highest[k - 1]:
            return times[k]
    return None


def registered_consumer(properties: dict[str, Any], stream_arn: str, name: str) -> str:
    """The ARN of the consumer a query's driver registered (executors read with it)."""
    from ..errors import SourceError
    desc = call(make_client(properties).describe_stream_consumer, "DescribeStreamConsumer",
                DEFAULT_BACKOFF["describe_stream_consumer"], StreamARN=stream_arn,
                ConsumerName=name)["ConsumerDescription"]
    if desc.get("ConsumerStatus") != "ACTIVE":
        raise SourceError(f"EFO consumer {name!r} of {stream_arn} is "
                          f"{desc.get('ConsumerStatus')}, not ACTIVE")
    return str(desc["ConsumerARN"])


__all__ = ["KinesisStream", "cut_at", "read_ahead", "registered_consumer"]
