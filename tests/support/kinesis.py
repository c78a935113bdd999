"""Kinesis test helpers: streams, producing with PutRecords, and reading back the truth."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tests.support.wait import wait_for, wait_until_clock

if TYPE_CHECKING:
    from collections.abc import Callable


def create_stream(client: Any, name: str, shards: int) -> str:
    client.create_stream(StreamName=name, ShardCount=shards)
    wait_active(client, name)
    return client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]


def wait_active(client: Any, name: str, timeout: float = 30) -> None:
    wait_for(lambda: client.describe_stream_summary(StreamName=name)[
        "StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", timeout,
        f"stream {name} to be ACTIVE", interval=0.1)


def put(client: Any, stream: str, payloads: list[bytes],
        key: Callable[[int], str] = lambda i: f"key-{i}") -> list[tuple[str, str]]:
    """PutRecords in batches of 500; returns [(shard id, sequence number)] in order."""
    out: list[tuple[str, str]] = []
    for lo in range(0, len(payloads), 500):
        chunk = payloads[lo:lo + 500]
        resp = client.put_records(StreamName=stream, Records=[
            {"Data": data, "PartitionKey": key(lo + i)} for i, data in enumerate(chunk)])
        assert resp["FailedRecordCount"] == 0, resp
        out += [(r["ShardId"], r["SequenceNumber"]) for r in resp["Records"]]
    return out


def put_spread(client: Any, stream: str, payloads: list[bytes], per_call: int,
               gap_s: float) -> list[tuple[str, str]]:
    """``put`` in calls of ``per_call`` records, each call in an arrival time ``gap_s`` after
    the last: a stream's batch cuts a shard only between two arrival milliseconds, so
    ``maxFetchRecordsPerShard`` can fall between the calls. [(shard id, sequence number)]."""
    out: list[tuple[str, str]] = []
    for lo in range(0, len(payloads), per_call):
        out += put(client, stream, payloads[lo:lo + per_call])
        wait_until_clock(time.time() + gap_s)
    return out


def all_records(client: Any, stream: str) -> dict[tuple[str, str], int]:
    """Every record of every shard with its arrival time (ms): the ground truth."""
    out: dict[tuple[str, str], int] = {}
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        it = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                       ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            resp = client.get_records(ShardIterator=it, Limit=10000)
            for r in resp["Records"]:
                out[(shard["ShardId"], r["SequenceNumber"])] = \
                    int(round(r["ApproximateArrivalTimestamp"].timestamp() * 1000))
            it = resp.get("NextShardIterator")
            if not resp["Records"] and resp.get("MillisBehindLatest") == 0:
                break
    return out
