"""The Kinesis planner (FLIP-27's enumerator): shards → splits for one run.

Interval mode: every shard open during the interval, AT_TIMESTAMP(start) until the first record
that arrived at or after the end. Incremental mode: each shard continues from its checkpoint;
a shard without one starts at the initial position, except that a child shard waits until all
its parents are finished (read to SHARD_END), so records of a key are read in order.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws import stream_ref
from ..errors import ConfigError, DataLossError, PlanError
from ..planning.bounds import bounds_for
from ..planning.plan import Gap
from ..sources import Planner, ResetTarget, SourcePlan
from .client import DEFAULT_BACKOFF, Backoff, call, error_code, make_client
from .polling import iterator_args, stream_arg, stream_arn_arg
from .positions import (
    AfterSequenceNumber,
    AtSequenceNumber,
    PlanTime,
    Position,
    SequenceNumbers,
    TrimHorizon,
    from_checkpoint,
    position_from_dict,
)
from .split import KinesisSplit

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..sources import PlanRequest, Properties
    from .client import ApiArgs, ShardFilter
    from .source import KinesisSource



@dataclass(frozen=True)
class KinesisPlanner(Planner[KinesisSplit]):
    """Plans a configured ``KinesisSource``: its streams' shards, as they are now."""

    source: KinesisSource

    def split_keys(self, properties: Properties) -> list[str]:
        return list(self._shards(make_client(properties))[0])

    def _shards(self, client: Any) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """({"stream:shardId-…": (stream name, shard id)}, {stream name: ARN})."""
        keys, arns = {}, {}
        for ref in self.source.streams:
            name, arn = stream_names(client, ref)
            arns[name] = arn
            keys.update({f"{name}:{s['ShardId']}": (name, s["ShardId"])
                         for s in list_shards(client, arn)})
        return keys, arns

    def plan(self, request: PlanRequest) -> SourcePlan[KinesisSplit]:
        return plan_kinesis(self.source, request)

    def reset_positions(self, to: Any, properties: Properties) -> ResetTarget:
        """Sequence numbers are checked against their shards (GetShardIterator
        AT_SEQUENCE_NUMBER), so a wrong one is refused now rather than failing the next read;
        the shards they do not name start over from the trim horizon, which the reset asks
        the user to confirm."""
        from .next_positions import reset_target
        if not (isinstance(to, dict) and "offsets" in to):
            return reset_target(to, [], int(time.time() * 1000))
        client = make_client(properties)
        shards, arns = self._shards(client)
        target = reset_target(to, list(shards), int(time.time() * 1000))
        for stream in arns:
            named = {shards[k][1]: v["at"] for k, v in target.positions.items()
                     if shards[k][0] == stream}
            check_sequence_numbers(client, named, {sid: name for name, sid in shards.values()
                                                   if name == stream}, arns, "--offsets")
        unnamed = sorted(set(shards) - set(target.positions))
        if not unnamed:
            return target
        return ResetTarget(target.positions, target.source_state, confirm=(
            f"{len(unnamed)} shard(s) not named in --offsets go back to the trim horizon "
            f"(TRIM_HORIZON) and read, and publish again, what they already published: "
            f"{', '.join(unnamed)}"))

def stream_names(client: Any, ref: str,
                 backoff: Backoff | None = None) -> tuple[str, str]:
    """A stream name or ARN → (name, ARN), checking the stream exists. An ARN is asked for
    by ARN: a stream of another account is reached that way (its resource policy).
    ``backoff``: the retries (a page that must not hang passes none)."""
    name, arn = stream_ref(ref)
    try:
        desc = call(client.describe_stream_summary, f"DescribeStreamSummary({name})",
                    backoff or DEFAULT_BACKOFF["list_shards"],
                    passthrough=("ResourceNotFoundException",),
                    **stream_arg(arn or name))["StreamDescriptionSummary"]
    except Exception as exc:
        if error_code(exc) == "ResourceNotFoundException":
            raise PlanError(f"Kinesis stream {ref!r} does not exist") from None
        raise
    return name, str(desc["StreamARN"])


def list_shards(client: Any, stream: str,
                shard_filter: ShardFilter | None = None) -> list[dict[str, Any]]:
    """All shards of a stream (a name or ARN; open and closed ones still within
    retention), following NextToken pages, as botocore gives them."""
    shards: list[dict[str, Any]] = []
    token = None
    while True:
        args: ApiArgs = {"NextToken": token} if token else stream_arg(stream)
        if shard_filter and not token:
            args["ShardFilter"] = shard_filter
        resp = call(client.list_shards, f"ListShards({stream})", DEFAULT_BACKOFF["list_shards"],
                    **args)
        shards += resp.get("Shards", [])
        token = resp.get("NextToken")
        if not token:
            return shards


def parents_of(shard: Mapping[str, object]) -> list[str]:
    return [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId"))
            if isinstance(p, str) and p]


def plan_kinesis(source: KinesisSource, request: PlanRequest,  # noqa: C901 - the per-shard cases of one plan, in the order read
                 client: Any = None) -> SourcePlan[KinesisSplit]:
    """Next positions come from what the readers saw (``checkpoint.next_positions``), so the
    plan leaves them empty."""
    props = request.properties
    client = client or make_client(props)
    incremental = request.mode != "interval"  # an interval run ignores the checkpoint
    checkpoint = request.checkpoint.positions if request.checkpoint and incremental else {}
    at = PlanTime(request.now_ms, bounds_for(request.interval))
    stop_before = source.stop.stop_before(at)
    initial = initial_position(source, request, at)
    splits: list[KinesisSplit] = []
    gaps: list[Gap] = []
    pending, expired = [], []
    info: dict[str, Any] = {"reader": source.reader, "streams": {},
                            "region": props.get("region"),
                            "endpoint_url": props.get("endpoint_url"),
                            "polling": source.polling.to_dict()}
    if incremental:
        info["initial_position"] = initial.to_dict()
    if source.reader == "efo" and source.efo_registration == "none":
        info["consumer_arns"] = dict(source.efo_consumer_arns)  # ARNs are not secrets
    all_shards: dict[str, str] = {}  # shard id → stream
    for ref in source.streams:
        name, arn = stream_names(client, ref)
        info["streams"][name] = arn
        since = at.bounds.read_from if at.bounds is not None else None  # shards open then
        shard_filter: ShardFilter | None = (
            {"Type": "FROM_TIMESTAMP", "Timestamp": (since - 1000) / 1000}
            if since is not None else None)
        shards = list_shards(client, arn, shard_filter)
        listed = {s["ShardId"] for s in shards}
        all_shards.update((sid, name) for sid in listed)
        for shard in shards:
            sid = shard["ShardId"]
            key = f"{name}:{sid}"
            parents = parents_of(shard)
            begin: Position | None
            if key in checkpoint:
                begin = from_checkpoint(checkpoint[key])
                if begin is None:
                    continue  # finished
                if isinstance(begin, AfterSequenceNumber):
                    begin = _check_trimmed(client, arn, sid, begin, source.on_data_loss, gaps,
                                           key)
            else:
                waiting = [p for p in parents if p in listed and
                           not checkpoint.get(f"{name}:{p}", {}).get("finished")]
                if waiting and incremental:
                    pending.append({"key": key, "waiting_for": waiting})
                    continue
                begin = initial.for_shard(sid, at)
            closed = "EndingSequenceNumber" in shard.get("SequenceNumberRange", {})
            splits.append(KinesisSplit(id=len(splits), stream=name, shard_id=sid,
                                       start=begin.to_dict(), stop_before=stop_before,
                                       closed=closed, parents=parents, stream_arn=arn))
        for key, value in checkpoint.items():
            stream, _, sid = key.partition(":")
            if stream == name and sid not in listed and not value.get("finished"):
                expired.append(key)
    if isinstance(initial, SequenceNumbers) and not checkpoint:
        check_sequence_numbers(client, initial.seqs, all_shards, info["streams"])
    if expired:
        gap = [Gap(k, checkpoint[k], None,
                   "shard expired before it was read to its end") for k in expired]
        if source.on_data_loss != "skip":
            raise DataLossError(f"data loss: shards {', '.join(expired)} expired before they "
                                "were read to their end. Set on_data_loss: skip to continue.",
                                gap)
        gaps += gap
    info.update(pending_children=pending, expired_keys=expired)
    return SourcePlan(splits=splits, gaps=gaps, info=info)


def initial_position(source: KinesisSource, request: PlanRequest, at: PlanTime) -> Position:
    """Where shards without a checkpoint start: the position the first plan resolved (kept in
    the checkpoint, so LATEST means the same instant for shards that appear later), else the
    configured start resolved now."""
    state = request.checkpoint.source_state if request.checkpoint else None
    if request.mode != "interval" and state and state.get("initial_position"):
        return position_from_dict(state["initial_position"])
    return source.start.resolve(at)


# AWS answers InvalidArgumentException; some emulators ResourceNotFoundException (the shard
# itself was checked just before).
_NOT_IN_SHARD = ("InvalidArgumentException", "ResourceNotFoundException")


def check_sequence_numbers(client: Any, seqs: dict[str, str], shards: dict[str, str],
                           arns: dict[str, str] | None = None,
                           what: str = "kinesis.start") -> None:
    """Sequence numbers a user gave must name shards that exist and lie in them: a mistyped
    shard id would otherwise be read from its start, a wrong number fail only mid-read.
    ``what`` names where the user gave them (``kinesis.start``, a reset's ``--offsets``)."""
    for sid, seq in sorted(seqs.items()):
        if sid not in shards:
            raise ConfigError(f"{what}: {sid!r} is not a shard of "
                              f"{', '.join(sorted(set(shards.values())))} (shards: "
                              f"{', '.join(sorted(shards)[:10])})")
        try:
            call(client.get_shard_iterator, f"GetShardIterator({sid})",
                 DEFAULT_BACKOFF["get_shard_iterator"], passthrough=_NOT_IN_SHARD,
                 **iterator_args((arns or {}).get(shards[sid], shards[sid]), sid,
                                 AtSequenceNumber(seq)))
        except Exception as exc:
            if error_code(exc) not in _NOT_IN_SHARD:
                raise
            raise ConfigError(f"{what}: sequence number {seq} is not in shard {sid} of "
                              f"{shards[sid]}") from None


def _check_trimmed(client: Any, stream: str, shard_id: str, position: AfterSequenceNumber,
                   policy: str, gaps: list[Gap], key: str | None = None
                   ) -> Position:
    """The record a checkpoint stopped at must still be there; if the trim horizon has passed
    it, records after it may have expired unread."""
    seq = position.seq
    key = key or f"{stream}:{shard_id}"
    probe = AtSequenceNumber(seq)
    first = None
    try:
        it = call(client.get_shard_iterator, f"GetShardIterator({shard_id})",
                  DEFAULT_BACKOFF["get_shard_iterator"],
                  passthrough=("ResourceNotFoundException", "InvalidArgumentException"),
                  **iterator_args(stream, shard_id, probe))["ShardIterator"]
        for _ in range(5):
            resp = call(client.get_records, f"GetRecords({shard_id})",
                        DEFAULT_BACKOFF["get_records"], ShardIterator=it, Limit=1,
                        **stream_arn_arg(stream))
            if resp.get("Records"):
                first = resp["Records"][0]["SequenceNumber"]
                break
            it = resp.get("NextShardIterator")
            if it is None or resp.get("MillisBehindLatest") == 0:
                break
    except Exception as exc:
        if error_code(exc) not in ("ResourceNotFoundException", "InvalidArgumentException"):
            raise
    if first == seq:
        return position
    gap = Gap(key, seq, first, "checkpoint older than the trim horizon")
    if policy != "skip":
        raise DataLossError(
            f"data loss: {key}: the checkpointed sequence number {seq} is older "
            f"than the trim horizon; records after it may have expired unread. Set "
            "on_data_loss: skip to continue from the trim horizon and record the gap.", [gap])
    gaps.append(gap)
    return TrimHorizon()
