"""Saved plans and releases: a plan of this version is read exactly, an older one is migrated
or refused with the reason, a newer one is refused (planning.plan.upgrade), as Flink's
versioned serializers read state. Every case names what is wrong; nothing is dropped silently."""
import copy
import dataclasses
import json
from typing import TYPE_CHECKING

import pytest

from streamslice.errors import ConfigError, PlanError, PlanVersionError, from_text
from streamslice.kafka.split import KafkaSplit, KafkaSplitSerializer
from streamslice.kinesis.split import KinesisSplit
from streamslice.planning import plan as plan_module
from streamslice.planning.plan import PLAN_VERSION, Gap, Interval, OutputTarget, ReadPlan
from streamslice.reading.event_time import EventTime
from streamslice.sources import read_plan
from streamslice.spark.plan_options import plan_from_options
from tests.support.checks import present

if TYPE_CHECKING:
    from streamslice.records import JsonObject


def kafka_plan(**kw):
    return ReadPlan(pipeline="p", source="kafka", mode="interval", planned_at=1,
                    splits=[KafkaSplit(0, "t", 0, 5, 9, high_watermark=12),
                            KafkaSplit(1, "t", 1, 0, 3)],
                    partition="interval=20240501T000000Z", output=OutputTarget("/d"),
                    interval=Interval(0, 3_600_000, 60_000), **kw)


def saved(**changes):
    """A plan's JSON as a task state store or XCom keeps it, with ``changes`` applied."""
    data = json.loads(kafka_plan().to_json())
    data.update(changes)
    return data


def test_a_plan_of_this_version_round_trips_exactly():
    plan = kafka_plan(run_id="r", next_positions={"t:0": 9})
    assert read_plan(plan.to_json()) == plan
    assert read_plan(plan.to_dict()) == plan
    assert read_plan(plan.to_json().encode()) == plan
    kinesis = ReadPlan(pipeline="k", source="kinesis", mode="incremental", planned_at=1,
                       splits=[KinesisSplit(0, "s", "shardId-1", {"type": "TRIM_HORIZON"}, 5)],
                       partition="batch=00000001", batch=1)
    assert read_plan(kinesis.to_json()) == kinesis
    assert kafka_plan().version == PLAN_VERSION


def test_a_plans_gaps_are_records_whose_json_keeps_its_shape():
    """A gap is a record in the plan (an offset, a sequence number or an expired shard's
    checkpoint value as its ends) and the JSON a saved plan holds, unchanged."""
    gaps = [Gap("t:0", 2, 7, "expired"), Gap("s:shardId-1", {"after": "5"}, None, "expired")]
    plan = kafka_plan(gaps=gaps)
    assert read_plan(plan.to_json()) == plan
    assert json.loads(plan.to_json())["gaps"] == [
        {"key": "t:0", "from": 2, "to": 7, "reason": "expired"},
        {"key": "s:shardId-1", "from": {"after": "5"}, "to": None, "reason": "expired"}]
    assert str(gaps[0]) == "t:0 from 2 to 7 (expired)"


@pytest.mark.parametrize("gap", [{"key": "t:0", "from": True, "to": 7, "reason": "expired"},
                                 {"key": 0, "from": 2, "to": 7, "reason": "expired"},
                                 {"key": "t:0", "from": 2, "reason": "expired"}])
def test_a_saved_plans_bad_gap_is_refused_by_name(gap):
    with pytest.raises(PlanError, match="plan gap"):
        read_plan(saved(gaps=[gap]))


def test_an_intervals_event_time_is_a_record_whose_json_keeps_its_shape():
    plan = kafka_plan()
    plan.interval = Interval(0, 3_600_000, 60_000, EventTime("meta.ts", "s"), 1_000)
    assert json.loads(plan.to_json())["interval"]["event_time"] == {
        "field": "meta.ts", "unit": "s", "format": None}
    assert read_plan(plan.to_json()) == plan
    bad = saved(interval={**saved()["interval"], "event_time": {"field": "t", "units": "s"}})
    with pytest.raises(PlanError, match="plan interval event_time: unknown field 'units'"):
        read_plan(bad)


def test_a_plan_from_a_newer_release_is_refused_with_what_to_do():
    with pytest.raises(PlanVersionError) as caught:
        read_plan(saved(version=PLAN_VERSION + 1))
    message = str(caught.value)
    assert f"plan version {PLAN_VERSION + 1} was written by a newer streamslice" in message
    assert f"reads plan versions 2 to {PLAN_VERSION}" in message
    assert "clear the run's plan task" in message
    assert caught.value.kind == "plan_version" and not caught.value.transient
    # it crosses a Spark or spark-submit boundary as the same kind
    assert isinstance(from_text(caught.value.to_line()), PlanVersionError)


def test_a_plan_older_than_any_migration_is_refused_with_the_reason():
    old = saved(version=1)
    del old["output"]
    with pytest.raises(PlanVersionError, match="plan version 1 is too old for this "
                                               r"streamslice \(it reads versions 2 to \d\): "
                                               "it has "
                                               "no output target"):
        read_plan(old)


def test_an_older_plan_is_migrated_step_by_step(monkeypatch):
    """Say version 4 renamed ``gaps`` to ``skipped`` and version 3 added ``note``: a version
    2 plan goes through both steps, and the result is a plan of version 4."""
    steps = []

    def v2_to_v3(data):
        steps.append(data["version"])
        return {**data, "note": "from 2"}

    def v3_to_v4(data):
        steps.append(data["version"])
        data = dict(data)
        data["skipped"] = data.pop("gaps")
        return data

    @dataclasses.dataclass
    class Later(ReadPlan):  # that release's plan type
        note: str = ""
        skipped: list = dataclasses.field(default_factory=list)
    monkeypatch.setattr(plan_module, "PLAN_VERSION", 4)
    monkeypatch.setattr(plan_module, "MIGRATIONS", {2: v2_to_v3, 3: v3_to_v4})
    old = saved(version=2, gaps=[{"key": "t:0", "from": 0, "to": 5, "reason": "expired"}])
    old_copy = copy.deepcopy(old)
    upgraded = plan_module.upgrade(old)
    assert steps == [2, 3] and upgraded["version"] == 4 and "gaps" not in upgraded
    assert upgraded["skipped"] == old["gaps"] and upgraded["note"] == "from 2"
    assert old == old_copy  # the saved plan itself is not changed
    later = Later.from_dict(old, lambda kind, d: KafkaSplitSerializer().from_dict(d))
    assert isinstance(later, Later)
    assert (later.note, later.skipped[0]["key"], later.version) == ("from 2", "t:0", 4)
    # a version 1 plan still has no way there
    monkeypatch.setattr(plan_module, "UNREADABLE", {})
    with pytest.raises(PlanVersionError, match=r"reads versions 2 to 4\): no migration"):
        plan_module.upgrade(saved(version=1))



def test_a_version_7_kafka_split_s_late_sides_are_its_unresolved_ones():
    """Version 8 renamed a Kafka split's ``late`` (sides a Spark-option read binds later) to
    ``unresolved``; a saved version 7 plan reads with them there, and its late-record bounds
    (``late_from``) stay as they were."""
    sides: JsonObject = {"start": {"offset": -2}, "stop": {"offset": -1}, "no_match": "error",
             "fail_on_data_loss": True}
    old = saved(version=7)
    old["splits"][0].pop("unresolved")
    old["splits"][0].update(late=sides, late_from=4)
    plan = read_plan(old)
    first, second = plan.splits[:2]
    assert isinstance(first, KafkaSplit) and isinstance(second, KafkaSplit)
    assert (first.unresolved, first.late_from) == (sides, 4)
    assert second.unresolved is None and plan.version == PLAN_VERSION
    with pytest.raises(PlanError, match="unknown field 'late'"):  # this version has no late
        read_plan({**saved(), "splits": [{**saved()["splits"][0], "late": sides}]})


def test_a_version_8_interval_s_neighbours_are_one_width_away():
    """Version 9 added the schedule's neighbouring bounds to the interval; a saved version 8
    plan owned records as if its neighbours were as wide as itself, and still does."""
    old = saved(version=8)
    for name in ("previous_start", "next_end"):
        old["interval"].pop(name)
    interval = present(read_plan(old).interval)
    assert (interval.previous_from, interval.next_until) == (-3_600_000, 7_200_000)

@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(surprise=1), "plan: unknown field 'surprise' for plan version"),
    (lambda d: d.pop("partition"), "plan: field 'partition' is missing"),
    (lambda d: d["splits"][1].update(owner="x"),
     "plan split 1: Kafka split: unknown field 'owner'"),
    (lambda d: d["splits"][0].pop("stop"), "plan split 0: Kafka split: field 'stop' is missing"),
    (lambda d: d["output"].update(bucket="b"), "plan output: unknown field 'bucket'"),
    (lambda d: d["interval"].pop("end"), "plan interval: field 'end' is missing"),
    (lambda d: d.update(splits={"0": {}}), "plan: 'splits' must be a list, got dict"),
    (lambda d: d["splits"].append(7), "plan split 2: a split must be a JSON object, got int"),
    (lambda d: d.update(source="pulsar"), "plan split 0: plan for source 'pulsar', which "
                                          "this streamslice does not have"),
    (lambda d: d.pop("version"), "plan has no valid version"),
    (lambda d: d.update(version="2"), "plan has no valid version"),
    (lambda d: d.update(version=True), "plan has no valid version"),
])
def test_a_damaged_plan_names_what_is_wrong(change, message):
    data = saved()
    change(data)
    with pytest.raises(PlanError, match=message.replace("(", r"\(")) as caught:
        read_plan(data)
    assert not isinstance(caught.value, PlanVersionError)


def test_text_that_is_not_a_plan():
    with pytest.raises(PlanError, match="plan is not JSON"):
        read_plan("{not json")
    with pytest.raises(PlanError, match="plan must be a JSON object, got list"):
        read_plan("[]")


def test_spark_option_plan_keeps_the_version_error_and_names_a_bad_plan():
    with pytest.raises(PlanVersionError):
        plan_from_options({"plan": json.dumps(saved(version=PLAN_VERSION + 1))}, "kafka")
    with pytest.raises(ConfigError, match="option plan is not a streamslice ReadPlan: plan: "
                                          "unknown field 'surprise'"):
        plan_from_options({"plan": json.dumps(saved(surprise=1))}, "kafka")
