"""Kinesis positions: strategies resolve at plan time and build the same GetShardIterator and
SubscribeToShard arguments; next positions come from reader summaries; resets."""
import pytest

from streamslice.errors import ConfigError, PlanError
from streamslice.kinesis.next_positions import next_positions, reset_target
from streamslice.kinesis.positions import (
    NO_BOUND,
    AfterSequenceNumber,
    ArrivedBefore,
    AtSequenceNumber,
    AtTimestamp,
    Latest,
    PlanTime,
    SequenceNumbers,
    ShardEnd,
    Tip,
    TrimHorizon,
    from_checkpoint,
    position_from_dict,
)
from streamslice.kinesis.split import KinesisSplit
from streamslice.planning.bounds import IntervalBounds
from streamslice.planning.plan import Interval, ReadPlan
from tests.support.records import summary

AT = PlanTime(now_ms=5_000, bounds=IntervalBounds(Interval(1_000, 2_000)))


@pytest.mark.parametrize("position, iterator, subscribe", [
    (TrimHorizon(), {"ShardIteratorType": "TRIM_HORIZON"}, {"Type": "TRIM_HORIZON"}),
    (AtTimestamp(1_500), {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": 1.5},
     {"Type": "AT_TIMESTAMP", "Timestamp": 1.5}),
    (AtSequenceNumber("7"), {"ShardIteratorType": "AT_SEQUENCE_NUMBER",
                             "StartingSequenceNumber": "7"},
     {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": "7"}),
    (AfterSequenceNumber("7"), {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                                "StartingSequenceNumber": "7"},
     {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": "7"}),
])
def test_each_position_builds_both_apis_arguments(position, iterator, subscribe):
    assert position.iterator_args() == iterator
    assert position.starting_position() == subscribe
    assert position_from_dict(position.to_dict()) == position


def test_starts_resolve_at_plan_time():
    assert Latest().resolve(AT) == AtTimestamp(5_000)
    assert AtTimestamp("data_interval_start").resolve(AT) == AtTimestamp(1_000)
    assert TrimHorizon().resolve(AT) == TrimHorizon()
    seqs = SequenceNumbers("AFTER_SEQUENCE_NUMBER", {"shardId-1": "9"})
    assert seqs.for_shard("shardId-1", AT) == AfterSequenceNumber("9")
    assert seqs.for_shard("shardId-2", AT) == TrimHorizon()
    assert position_from_dict(seqs.to_dict()) == seqs
    with pytest.raises(PlanError, match="needs a data interval"):
        AtTimestamp("data_interval_start").resolve(PlanTime(now_ms=1))


def test_stops():
    assert Tip().stop_before(AT) == 5_000
    assert ShardEnd().stop_before(AT) == NO_BOUND
    assert ArrivedBefore("data_interval_end").stop_before(AT) == 2_000
    assert ArrivedBefore(1_234).stop_before(AT) == 1_234


def test_checkpoint_values_continue_where_they_say():
    assert from_checkpoint({"after": "5"}) == AfterSequenceNumber("5")
    assert from_checkpoint({"at": "5"}) == AtSequenceNumber("5")
    assert from_checkpoint({"at_timestamp": 9}) == AtTimestamp(9)
    assert from_checkpoint({"finished": True}) is None


def plan(*splits, expired=()):
    return ReadPlan(pipeline="p", source="kinesis", mode="incremental", planned_at=0,
                    splits=list(splits), partition="batch=00000001",
                    source_info={"expired_keys": list(expired)})


def split(i, shard, stop_before=1_000):
    return KinesisSplit(i, "s", shard, {"type": "TRIM_HORIZON"}, stop_before)


def test_next_positions_from_what_the_readers_saw():
    p = plan(split(0, "a"), split(1, "b"), split(2, "c"), split(3, "d", NO_BOUND))
    summaries = {i: summary(s, split=i) for i, s in enumerate(
        [{"finished": True, "last_seq": "3"}, {"last_seq": "8"}, {}, {}])}
    out = next_positions(p, summaries, {"s:c": {"after": "2"}, "s:gone": {"after": "1"}})
    assert out == {"s:a": {"finished": True}, "s:b": {"after": "8"}, "s:c": {"after": "2"},
                   "s:gone": {"after": "1"}}


def test_an_empty_read_continues_from_its_bound_and_expired_shards_drop_out():
    p = plan(split(0, "a", 1_500), expired=["s:old"])
    out = next_positions(p, {0: summary()}, {"s:old": {"after": "1"}})
    assert out == {"s:a": {"at_timestamp": 1_500}}
    assert next_positions(p, {0: summary()}, {"s:a": {"at": "4"}}) == {"s:a": {"at": "4"}}


def test_resets():
    keys = ["s:shardId-0", "s:shardId-1"]
    trim = reset_target("TRIM_HORIZON", keys, 7)
    assert trim.positions == {} and trim.source_state == \
        {"initial_position": {"type": "TRIM_HORIZON"}}
    assert reset_target("earliest", keys, 7) == trim
    assert reset_target("LATEST", keys, 7).source_state == \
        {"initial_position": {"type": "AT_TIMESTAMP", "timestamp": 7}}
    assert reset_target({"timestamp": 42}, keys, 7).source_state == \
        {"initial_position": {"type": "AT_TIMESTAMP", "timestamp": 42}}
    seq = reset_target({"offsets": {"s:shardId-1": "4960"}}, keys, 7)
    assert seq.positions == {"s:shardId-1": {"at": "4960"}}
    with pytest.raises(ConfigError, match="'s:shardId-9' is not a shard this pipeline reads"):
        reset_target({"offsets": {"s:shardId-9": "1"}}, keys, 7)
    with pytest.raises(ConfigError, match="'abc' is not a sequence number"):
        reset_target({"offsets": {"s:shardId-0": "abc"}}, keys, 7)
    with pytest.raises(ConfigError, match="give TRIM_HORIZON, LATEST"):
        reset_target("yesterday", keys, 7)


def test_the_sweeper_matches_only_a_pipelines_own_run_consumers():
    from streamslice.kinesis.consumers import is_run_consumer, run_consumer_name
    assert is_run_consumer("orders", run_consumer_name("orders", "manual__2024"))
    for other in ("orders-eu", "orders-eu-0123456789", "orders-team-b", "orders-0123"):
        assert not is_run_consumer("orders", other)


def test_a_consumer_name_must_leave_room_for_the_run_suffix():
    from streamslice.config import parse_pipeline
    text = ("mode: incremental\nkinesis:\n  stream: s\n  reader: efo\n  efo:\n"
            "    consumer_name: {}\noutput: {{path: /x}}\n")
    parse_pipeline(text.format("c" * 117))
    with pytest.raises(ConfigError, match="kinesis.efo.consumer_name: is 118 characters; at "
                                          "most 117"):
        parse_pipeline(text.format("c" * 118))
