"""Checkpoint advance in interval mode and resets (pure logic over the checkpoint model)."""
from streamslice.commit.checkpoint import Checkpoint, advance, reset
from streamslice.kafka.reader import KafkaReaders
from streamslice.kafka.split import KafkaSplit
from streamslice.kinesis.reader import KinesisReaders
from streamslice.planning.plan import Interval, ReadPlan
from streamslice.sources import ResetTarget
from tests.support.checks import present

H = 3_600_000


def interval_plan(hour, positions):
    return ReadPlan(pipeline="p", source="kafka", mode="interval", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 1)], partition=f"interval={hour}",
                    interval=Interval(hour * H, (hour + 1) * H), next_positions=positions)


def test_interval_runs_advance_to_the_latest_interval():
    first = present(advance(None, interval_plan(1, {"t:0": 10}), now_ms=5, run_id="r1"))
    assert (first.positions, first.interval_end, first.batch) == ({"t:0": 10}, 2 * H, 0)
    second = present(advance(first, interval_plan(2, {"t:0": 20}), now_ms=6, run_id="r2"))
    assert (second.positions, second.interval_end, second.partition) == \
        ({"t:0": 20}, 3 * H, "interval=2")


def test_a_backfilled_older_interval_leaves_the_newest_in_place():
    newest = advance(None, interval_plan(5, {"t:0": 50}), now_ms=1, run_id="r5")
    after_backfill = advance(newest, interval_plan(2, {"t:0": 20}), now_ms=2, run_id="b2")
    assert after_backfill is newest


def test_interval_runs_need_no_planned_base():
    """Interval runs are independent: an unrelated checkpoint never blocks them."""
    unrelated = Checkpoint(positions={"t:0": 999}, batch=7, interval_end=H)
    out = present(advance(unrelated, interval_plan(3, {"t:0": 30}), now_ms=1))
    assert out.positions == {"t:0": 30} and out.batch == 7


def test_readers_positions_replace_the_plans():
    out = present(advance(None, interval_plan(1, {"t:0": 10}), now_ms=1,
                          positions={"s:shard-0": {"after": "42"}}))
    assert out.positions == {"s:shard-0": {"after": "42"}}


def test_initial_position_is_kept_from_the_first_plan():
    """The source says what it keeps (Kinesis: the plan's initial position); the first commit
    that has it sets it, and later ones leave it."""
    readers = KinesisReaders()
    plan = interval_plan(1, {})
    plan.source_info = {"initial_position": {"type": "AT_TIMESTAMP", "timestamp": 5}}
    first = advance(None, plan, now_ms=1, keeps=readers.source_state(plan))
    later = interval_plan(2, {})
    later.source_info = {"initial_position": {"type": "AT_TIMESTAMP", "timestamp": 9}}
    assert present(advance(first, later, now_ms=2, keeps=readers.source_state(later))
                   ).source_state == {"initial_position": {"type": "AT_TIMESTAMP", "timestamp": 5}}
    assert KafkaReaders().source_state(plan) == {}, "a source keeps nothing by default"


def test_reset_keeps_the_batch_counter_and_replaces_source_state():
    current = Checkpoint(positions={"t:0": 9}, batch=4, partition="batch=00000004",
                         source_state={"initial_position": {"type": "LATEST"}})
    out = reset(current, ResetTarget({}, {"initial_position": {"type": "TRIM_HORIZON"}}),
                note="reset to TRIM_HORIZON")
    assert (out.positions, out.batch, out.run_id) == ({}, 4, "reset to TRIM_HORIZON")
    assert out.source_state == {"initial_position": {"type": "TRIM_HORIZON"}}
    assert reset(None, ResetTarget({"t:0": 0})).batch == 0


def test_a_retry_after_its_own_checkpoint_write_is_recognised():
    """A crash right after the checkpoint write: the retry of the same run finds the
    checkpoint it wrote and does not report "the checkpoint moved"."""
    from streamslice.kafka.split import KafkaSplit
    plan = ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 5)], partition="batch=00000001", batch=1,
                    next_positions={"t:0": 5})
    written = advance(None, plan, now_ms=1, run_id="run-1")
    assert advance(written, plan, now_ms=2, run_id="run-1") is written
    import pytest

    from streamslice.errors import CommitError
    with pytest.raises(CommitError, match="checkpoint moved"):
        advance(written, plan, now_ms=3, run_id="run-2")
