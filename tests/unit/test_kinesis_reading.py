"""Kinesis reading logic against a scripted fake client (our own retry, iterator, event and
bound handling only; the real server is covered by tests/integration/test_kinesis*.py)."""
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from streamslice.errors import DataLossError, SourceError
from streamslice.kinesis.client import Backoff
from streamslice.kinesis.deaggregate import deaggregate
from streamslice.kinesis.efo import subscribe
from streamslice.kinesis.planner import _check_trimmed
from streamslice.kinesis.polling import PollingSettings, ShardRead, poll
from streamslice.kinesis.positions import AfterSequenceNumber, TrimHorizon
from streamslice.kinesis.split import KinesisSplit

if TYPE_CHECKING:
    from streamslice.planning.plan import Gap

T0 = 1_714_521_600_000


def rec(seq, ms, data=b"x"):
    return {"SequenceNumber": str(seq), "Data": data, "PartitionKey": "k",
            "ApproximateArrivalTimestamp": datetime.fromtimestamp(ms / 1000, tz=timezone.utc)}


def error(code):
    return ClientError({"Error": {"Code": code, "Message": code}}, "Op")


class FakeClient:
    """Answers from a script: each entry is a response dict or an exception to raise."""

    def __init__(self, get_records=(), subscribe=(), describe=()):
        self.script = {"get_records": list(get_records), "subscribe_to_shard": list(subscribe),
                       "describe_stream_summary": list(describe)}
        self.iterators = []

    def describe_stream_summary(self, **kw):  # the server's clock, when scripted
        return self._next("describe_stream_summary") if self.script[
            "describe_stream_summary"] else {}

    def get_shard_iterator(self, **kw):
        self.iterators.append(kw)
        return {"ShardIterator": f"it-{len(self.iterators)}"}

    def _next(self, name):
        item = self.script[name].pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def get_records(self, **kw):
        return self._next("get_records")

    def subscribe_to_shard(self, **kw):
        self.iterators.append(kw)
        return self._next("subscribe_to_shard")


def split(stop_before=T0 + 10_000, closed=False):
    return KinesisSplit(id=0, stream="s", shard_id="shardId-0", start={"type": "TRIM_HORIZON"},
                        stop_before=stop_before, closed=closed)


FAST = PollingSettings(interval_ms=0, backoff={k: Backoff(3, 1, 2, 1.5) for k in (
    "get_records", "get_shard_iterator", "subscribe_to_shard")})


def run_poll(client, sp):
    state, sleeps = ShardRead(), list[float]()
    records = [r for batch in poll(client, sp, FAST, state, sleep=sleeps.append) for r in batch]
    return [r["SequenceNumber"] for r in records], state, sleeps


def test_expired_iterator_is_reacquired_after_the_last_sequence_number():
    client = FakeClient([
        {"Records": [rec(1, T0), rec(2, T0 + 1)], "NextShardIterator": "a",
         "MillisBehindLatest": 500},
        error("ExpiredIteratorException"),
        {"Records": [rec(3, T0 + 2)], "NextShardIterator": "b", "MillisBehindLatest": 0},
        {"Records": [], "NextShardIterator": "c", "MillisBehindLatest": 0}])
    seqs, state, _ = run_poll(client, split())
    assert seqs == ["1", "2", "3"] and state.expired_iterators == 1
    assert client.iterators[-1]["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER"
    assert client.iterators[-1]["StartingSequenceNumber"] == "2"
    assert (state.millis_behind_first, state.millis_behind_last) == (500, 0)
    assert not state.finished


def test_throttling_is_retried_with_backoff_then_fails_clearly():
    client = FakeClient([error("ProvisionedThroughputExceededException"),
                         error("LimitExceededException"),
                         {"Records": [rec(1, T0)], "NextShardIterator": None}])
    seqs, state, sleeps = run_poll(client, split())
    assert seqs == ["1"] and state.finished and len(sleeps) == 2
    assert all(0 <= s <= 0.002 for s in sleeps)
    client = FakeClient([error("ProvisionedThroughputExceededException")] * 4)
    with pytest.raises(SourceError, match="GetRecords.*ProvisionedThroughputExceeded"):
        run_poll(client, split())


def test_stops_exactly_at_the_bound_and_at_shard_end():
    client = FakeClient([{"Records": [rec(1, T0), rec(2, T0 + 9_999), rec(3, T0 + 10_000)],
                          "NextShardIterator": "a", "MillisBehindLatest": 0}])
    assert run_poll(client, split())[0] == ["1", "2"]
    client = FakeClient([{"Records": [rec(1, T0)], "NextShardIterator": None,
                          "ChildShards": [{"ShardId": "shardId-1"}]}])
    seqs, state, _ = run_poll(client, split())
    assert seqs == ["1"] and state.finished


class Stream(list):
    closed = False

    def close(self):
        self.closed = True


def event(records, cont, behind=100, children=None):
    ev = {"Records": records, "ContinuationSequenceNumber": cont, "MillisBehindLatest": behind}
    if children:
        ev["ChildShards"] = children
    return {"SubscribeToShardEvent": ev}


def run_efo(client, sp):
    state, sleeps = ShardRead(), list[float]()
    out = [r["SequenceNumber"] for b in subscribe(client, sp, "arn:consumer", FAST, state,
                                                  sleep=sleeps.append) for r in b]
    return out, state


def test_efo_resubscribes_from_the_continuation_and_ends_with_the_shard():
    first = Stream([event([rec(1, T0), rec(2, T0 + 1)], "2")])  # subscription ends (5 min)
    final = Stream([event([rec(3, T0 + 2)], "3"),
                    event([], None, 0, children=[{"ShardId": "shardId-1",
                                                  "ParentShards": ["shardId-0"]}])])
    client = FakeClient(subscribe=[{"EventStream": first}, error("ResourceInUseException"),
                                   {"EventStream": final}])
    seqs, state = run_efo(client, split(closed=True))
    assert seqs == ["1", "2", "3"] and state.finished and state.resubscriptions == 1
    assert client.iterators[1]["StartingPosition"] == {"Type": "AFTER_SEQUENCE_NUMBER",
                                                       "SequenceNumber": "2"}
    assert first.closed and final.closed


def test_efo_stops_at_the_bound_mid_event_and_closes_the_subscription():
    stream = Stream([event([rec(1, T0), rec(2, T0 + 10_000)], "2")])
    seqs, state = run_efo(FakeClient(subscribe=[{"EventStream": stream}]), split())
    assert seqs == ["1"] and stream.closed and not state.finished


def test_efo_caught_up_on_an_open_shard_ends_the_read():
    stream = Stream([event([rec(1, T0)], "1", 0), event([], "1", 0)])
    seqs, state = run_efo(FakeClient(subscribe=[{"EventStream": stream}]), split())
    assert seqs == ["1"] and not state.finished


def test_deaggregation_of_kpl_records():
    from aws_kinesis_agg.aggregator import RecordAggregator
    agg = RecordAggregator()
    for i in range(3):
        agg.add_user_record(f"pk{i}", f"payload-{i}".encode())
    pk, ehk, data = agg.clear_and_get().get_contents()
    assert deaggregate(data, pk) == [(0, "pk0", b"payload-0"), (1, "pk1", b"payload-1"),
                                     (2, "pk2", b"payload-2")]
    assert deaggregate(b"plain", "k") == [(None, "k", b"plain")]
    assert deaggregate(data[:-1] + b"\x00", pk) == [(None, pk, data[:-1] + b"\x00")]


def test_checkpoint_older_than_the_trim_horizon():
    def client():
        return FakeClient([{"Records": [rec(900, T0)], "NextShardIterator": "x"}])
    gaps: list[Gap] = []
    with pytest.raises(DataLossError, match="checkpointed sequence number 500 is older than the"
                                            " trim horizon"):
        _check_trimmed(client(), "s", "shardId-0", AfterSequenceNumber("500"), "fail", gaps)
    pos = _check_trimmed(client(), "s", "shardId-0", AfterSequenceNumber("500"), "skip", gaps)
    assert pos == TrimHorizon()
    assert [g.to_dict() for g in gaps] == [{"key": "s:shardId-0", "from": "500", "to": "900",
                                           "reason": "checkpoint older than the trim horizon"}]
    kept = FakeClient([{"Records": [rec(500, T0)], "NextShardIterator": "x"}])
    assert _check_trimmed(kept, "s", "shardId-0", AfterSequenceNumber("500"), "fail",
                          []) == AfterSequenceNumber("500")


NOT_FOUND = ClientError({"Error": {
    "Code": "ResourceNotFoundException",
    "Message": "Unable to find record with provided SequenceNumber 4960 in stream s"}},
    "GetShardIterator")
WRONG_SHARD = ClientError({"Error": {
    "Code": "InvalidArgumentException",
    "Message": "Invalid StartingSequenceNumber. It encodes shardId-1, while it was used in a "
               "call to a shard with shardId-0"}}, "SubscribeToShard")


@pytest.mark.parametrize("answer", [NOT_FOUND, WRONG_SHARD])
def test_a_start_not_in_the_shard_is_a_config_error_for_both_readers(answer):
    """What a local server and AWS answer for a sequence number not in the shard: retrying
    cannot help, so it is a ConfigError naming the split and the number (the fake client
    scripts the answers: our classification only); the stream or shard gone stays a
    source error."""
    from streamslice.errors import ConfigError
    from streamslice.kinesis.polling import shard_iterator

    class Refusing(FakeClient):
        def get_shard_iterator(self, **kw):
            raise answer

    sp = KinesisSplit(id=0, stream="s", shard_id="shardId-0",
                      start={"type": "AT_SEQUENCE_NUMBER", "seq": "4960"}, stop_before=T0)
    with pytest.raises(ConfigError, match=r"^s:shardId-0: sequence number 4960 is not in "
                                          r"shard shardId-0 \((ResourceNotFound|InvalidArg)"):
        shard_iterator(Refusing(), sp, sp.start_position, FAST)
    with pytest.raises(ConfigError, match="sequence number 4960 is not in shard shardId-0"):
        run_efo(FakeClient(subscribe=[answer]), sp)
    gone = ClientError({"Error": {"Code": "ResourceNotFoundException",
                                  "Message": "Stream s under account 1 not found."}}, "Op")
    with pytest.raises(SourceError, match="Stream s under account 1 not found"):
        run_efo(FakeClient(subscribe=[gone]), sp)


def dated(resp, ms):
    """``resp`` as botocore gives it, with the server's ``Date`` header at ``ms``."""
    from email.utils import format_datetime
    date = format_datetime(datetime.fromtimestamp(ms / 1000, tz=timezone.utc), usegmt=True)
    return {**resp, "ResponseMetadata": {"HTTPHeaders": {"date": date}}}


def test_caught_up_ends_only_once_the_stream_s_clock_passed_the_bound(monkeypatch):
    """This worker's clock is past the bound, the server's is not: records may still arrive
    before the bound, so the read polls on until the server's clock passes it."""
    from streamslice.kinesis import polling
    monkeypatch.setattr(polling, "wall_ms", lambda: T0 + 60_000)
    empty = {"Records": [], "NextShardIterator": "n", "MillisBehindLatest": 0}
    client = FakeClient([
        dated({"Records": [rec(1, T0)], "NextShardIterator": "a", "MillisBehindLatest": 0},
              T0 + 5_000),
        dated(empty, T0 + 6_000),  # caught up, the server's clock 4 s before the bound
        dated({"Records": [rec(2, T0 + 9_000)], "NextShardIterator": "b",
               "MillisBehindLatest": 0}, T0 + 9_000),
        dated(empty, T0 + 10_000),  # the server's clock at the bound: closed
        dated({"Records": [rec(3, T0 + 10_500)], "NextShardIterator": "c"}, T0 + 10_500)])
    seqs, state, sleeps = run_poll(client, split())
    assert seqs == ["1", "2"] and state.calls == 4
    assert sleeps and min(sleeps) > 0  # paced while it waits, even with interval_ms 0


def test_a_bound_ahead_of_this_worker_s_clock_ends_at_the_tip(monkeypatch):
    from streamslice.kinesis import polling
    monkeypatch.setattr(polling, "wall_ms", lambda: T0)  # a stop timestamp in the future
    client = FakeClient([dated({"Records": [], "NextShardIterator": "n",
                                "MillisBehindLatest": 0}, T0)])
    assert run_poll(client, split())[0] == []


def test_a_server_clock_that_never_catches_up_is_an_error(monkeypatch):
    from streamslice.kinesis import polling
    monkeypatch.setattr(polling, "wall_ms", lambda: T0 + 60_000)
    monkeypatch.setattr(polling, "CLOCK_WAIT_S", 0.0)
    ticks = iter(range(100))
    client = FakeClient([dated({"Records": [], "NextShardIterator": "n",
                                "MillisBehindLatest": 0}, T0)] * 3)
    with pytest.raises(SourceError, match="the Kinesis server's clock is still 10s before "
                                          "the interval's end"):
        list(poll(client, split(), FAST, ShardRead(), sleep=lambda s: None,
                  clock=lambda: float(next(ticks))))


def test_efo_caught_up_reads_on_until_the_stream_s_clock_passed_the_bound(monkeypatch):
    """A subscription's events carry no server time: once this worker's clock is past the
    bound, a caught-up read asks the server's (DescribeStreamSummary) and takes the events
    that follow while it is before the bound."""
    from streamslice.kinesis import efo, polling
    monkeypatch.setattr(polling, "wall_ms", lambda: T0 + 60_000)
    stream = Stream([event([rec(1, T0)], "1", 0), event([], "1", 0),
                     event([rec(2, T0 + 9_000)], "2", 0), event([], "2", 0),
                     event([rec(3, T0 + 10_500)], "3", 0)])
    client = FakeClient(subscribe=[{"EventStream": stream}],
                        describe=[dated({}, T0 + 6_000), dated({}, T0 + 10_000)])
    monkeypatch.setattr(efo, "_SERVER", [])
    seqs, state = run_efo(client, split())
    assert seqs == ["1", "2"] and client.script["describe_stream_summary"] == []
    # another shard's read in the same process: the server's clock is known to be past
    stream = Stream([event([rec(4, T0)], "4", 0), event([], "4", 0)])
    other = FakeClient(subscribe=[{"EventStream": stream}], describe=[dated({}, T0)])
    assert run_efo(other, split())[0] == ["4"] and other.script["describe_stream_summary"]
