"""The ReadPlan: the JSON list of splits for one run, saved so a retry reads the same ranges
and publishes to the same place.

Plans outlive the release that wrote them (a task state store, an XCom, a retry after an
upgrade, a plan handed to spark-submit), so they carry ``version`` and are read the way
Flink's versioned serializers read state: a plan of this version is read exactly (a field this
release does not know, or one missing, is an error, never silently dropped); an older one is
migrated step by step (``MIGRATIONS``) or refused with the reason; a newer one is refused
(``PlanVersionError``). Changing what a plan means (a field added, renamed or reinterpreted,
here or in a source's split) bumps ``PLAN_VERSION`` and adds the step from the previous one.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, TypeGuard

from ..aws import AwsAuth
from ..errors import PlanError, PlanVersionError
from ..reading.event_time import EventTime
from ..records import JsonObject, JsonValue, RecordKind
from ..splits import Positions, SplitT  # noqa: TC001 - its fields resolve at run time
from .layout import PartitionPath

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..records import Migration
    from ..splits import Split

    # (source kind, split JSON) → that source's split (``sources.read_split``)
    SplitFromDict = Callable[[str, JsonObject], Split[Any]]

PLAN_VERSION = 9


def _v2_to_v3(data: JsonObject) -> JsonObject:
    """Version 3 added the output's AWS identity (``OutputTarget.aws``); a version 2 run
    reached its output with the default chain, which ``{}`` means."""
    return _added(data, "output", aws={})


def _v3_to_v4(data: JsonObject) -> JsonObject:
    """Version 4 added ``decode.flatten`` (false: a record's fields in one struct column); a
    plan without it flattens, as every plan of version 3 did."""
    return data


def _v4_to_v5(data: JsonObject) -> JsonObject:
    """Version 5 added ``output.partition_path`` (a folder made of the interval's time); a
    version 4 run published to the folder named as its partition, which ``None`` means."""
    return _added(data, "output", partition_path=None)


def _v5_to_v6(data: JsonObject) -> JsonObject:
    """Version 6 added the interval's ``event_time`` and ``allowed_earliness``; a version 5
    interval run owned records by their arrival, which ``None`` and ``0`` mean (and its Kafka
    splits have no ``home_from``/``early_until``, which only event time uses)."""
    data = _added(data, "interval", event_time=None, allowed_earliness=0)
    splits = data.get("splits")
    if isinstance(splits, list):  # the splits with interval positions
        data = {**data, "splits": [{**s, "home_from": None, "early_until": None}
                                   if isinstance(s, dict) and "owned_until" in s else s
                                   for s in splits]}
    return data


def _v6_to_v7(data: JsonObject) -> JsonObject:
    """Version 7 added ``output.partition_by`` (an Iceberg table's time transform); a version
    6 run's table was partitioned by the partition's name, which ``None`` means."""
    return _added(data, "output", partition_by=None)


def _v7_to_v8(data: JsonObject) -> JsonObject:
    """Version 8 renamed a Kafka split's ``late`` (its sides still to resolve, for a read
    given as Spark options) to ``unresolved``: "late" is what records older than an interval
    are."""
    splits = data.get("splits")
    if isinstance(splits, list):
        data = {**data, "splits": [_renamed(s, "late", "unresolved") for s in splits]}
    return data


def _v8_to_v9(data: JsonObject) -> JsonObject:
    """Version 9 added the interval's neighbouring bounds from the schedule
    (``previous_start``, ``next_end``); a version 8 run took its neighbours to be as wide as
    its own interval, which ``None`` means."""
    return _added(data, "interval", previous_start=None, next_end=None)


def _added(data: JsonObject, key: str, **new: JsonValue) -> JsonObject:
    """``data`` with ``new`` fields in its object ``key``, where it has that object (a plan
    without an output or an interval has nothing to add them to)."""
    inner = data.get(key)
    if not isinstance(inner, dict):
        return data
    return {**data, key: {**inner, **new}}


def _renamed(split: JsonValue, old: str, new: str) -> JsonValue:
    if not isinstance(split, dict) or old not in split:
        return split
    rest = {k: v for k, v in split.items() if k != old}
    return {**rest, new: split[old]}


# version → the function turning a plan of that version into one of the next.
MIGRATIONS: dict[int, Migration] = {2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6,
                                    6: _v6_to_v7, 7: _v7_to_v8, 8: _v8_to_v9}
# Versions no release reads any more, and why they cannot be migrated.
UNREADABLE = {1: "it has no output target (where a run publishes was read from the pipeline "
                 "file then, and it may have changed since)"}


@dataclass
class Interval:
    start: int  # epoch ms, inclusive
    end: int  # epoch ms, exclusive
    allowed_lateness: int = 0  # ms
    # An event-time field: records are owned by its time, not by their arrival
    # (``planning.bounds.classify_event_time``); None: arrival.
    event_time: EventTime | None = None
    allowed_earliness: int = 0  # ms a field's time may lie after the record's arrival
    # The schedule's neighbouring intervals: where the previous one starts and the next one
    # ends (a month, a weekend's gap, are not this interval's width); None: one width away
    previous_start: int | None = None
    next_end: int | None = None

    @property
    def width(self) -> int:
        return self.end - self.start

    @property
    def previous_from(self) -> int:
        return self.previous_start if self.previous_start is not None else \
            self.start - self.width

    @property
    def next_until(self) -> int:
        return self.next_end if self.next_end is not None else self.end + self.width


GapPosition = int | str | JsonObject


@dataclass(frozen=True)
class Gap:
    """Records a run passed over because they were gone before it read them (``on_data_loss:
    skip``): the split's key, between which positions (offsets, sequence numbers, an expired
    Kinesis shard's checkpoint value; ``to`` None: to that shard's end) and why. Its JSON
    says ``from`` and ``to``."""

    key: str
    from_: GapPosition
    to: GapPosition | None
    reason: str

    def to_dict(self) -> JsonObject:
        return {"key": self.key, "from": self.from_, "to": self.to, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: object) -> Gap:
        """A gap from a plan's JSON, its fields checked (a PlanError names the bad one)."""
        read = dict(_mapping(data, "plan gap"))
        if sorted(read) != ["from", "key", "reason", "to"]:
            raise PlanError(f"plan gap: fields must be key, from, to and reason, got "
                            f"{', '.join(sorted(read))}")
        key, start, end, reason = read["key"], read["from"], read["to"], read["reason"]
        if isinstance(key, str) and isinstance(reason, str) and _position(start) \
                and (end is None or _position(end)):
            return cls(key, start, end, reason)
        raise PlanError(f"plan gap: {read!r} is not a key, two positions and a reason")

    def __str__(self) -> str:
        return f"{self.key} from {self.from_} to {self.to} ({self.reason})"


def _position(value: JsonValue) -> TypeGuard[GapPosition]:
    return isinstance(value, str | dict) or (isinstance(value, int)
                                             and not isinstance(value, bool))


@dataclass(frozen=True)
class OutputTarget:
    """Where and how a run publishes: planned once, so read and commit agree even if the
    pipeline file is edited between the two tasks."""

    dataset: str  # URI of the pipeline's dataset root (…/pipeline=<name>)
    format: str = "parquet"
    compression: str = "snappy"
    publisher: str = "files"  # its publisher's name (commit.publishers: Publisher.name)
    table: str | None = None  # iceberg: namespace.table; delta: the table's URI
    catalog: dict[str, str] = field(default_factory=dict)  # iceberg catalog properties
    conn_id: str | None = None  # an Airflow connection holding more catalog properties
    # How every process reaches the output (S3, a Glue catalog): region, endpoint, role to
    # assume; no secret. ``AwsAuth()`` (``{}`` in JSON): each library's own default chain.
    aws: AwsAuth = AwsAuth()
    # strftime template of an interval's start: the folder it lands in (planning.layout);
    # None: the partition's name (interval=…, batch=…) is its folder
    partition_path: str | None = None
    # An Iceberg table's partition spec: a time transform of a record column, "day(event_time)"
    # (commit.publishers.iceberg), or a Delta table's partition column of it (….delta); None:
    # identity on the partition's name
    partition_by: str | None = None

    def folder(self, partition: str, interval: Interval | None) -> str:
        """Where a partition lives, relative to the dataset. Its identity stays ``partition``
        (checkpoints, manifests, dead letters and staging key by that)."""
        if self.partition_path is None or interval is None:
            return partition
        return PartitionPath(self.partition_path).render(interval.start)

    @property
    def auth(self) -> AwsAuth | None:
        return self.aws if self.aws.to_dict() else None

    @property
    def work(self) -> str:
        """Staging, trash and dead letters: ``<root>/_streamslice/<dataset name>``, a sibling
        of the dataset, so nothing but data is under the dataset for any reader's glob."""
        root, _, name = self.dataset.rstrip("/").rpartition("/")
        return f"{root}/_streamslice/{name}"

    def dead_letters(self, partition: str) -> str:
        return f"{self.work}/dead_letter/{partition}"


@dataclass
class ReadPlan(Generic[SplitT]):
    """``SplitT``: the source's split type. A plan read back from JSON holds ``Split[Any]``
    until a source's own role takes it (``sources.Source``), typed by that role."""

    pipeline: str
    source: str  # a key of sources.SOURCES
    mode: str  # "interval" | "incremental" | "bounded"
    planned_at: int  # epoch ms
    splits: list[SplitT]
    partition: str  # output partition, relative: "interval=…" or "batch=…"
    output: OutputTarget | None = None
    run_id: str | None = None
    interval: Interval | None = None
    batch: int | None = None
    base_checkpoint: dict[str, Any] | None = None  # the checkpoint this plan started from
    next_positions: Positions = field(default_factory=dict)  # the checkpoint on commit
    gaps: list[Gap] = field(default_factory=list)  # skipped data loss
    decode: dict[str, Any] = field(default_factory=dict)
    source_info: dict[str, Any] = field(default_factory=dict)  # servers, stream ARNs: no secrets
    version: int = PLAN_VERSION

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self) -> JsonObject:
        data: JsonObject = asdict(self)
        data["splits"] = [s.to_dict() for s in self.splits]
        data["gaps"] = [g.to_dict() for g in self.gaps]
        if self.output is not None:  # as AwsAuth writes itself: the settings given
            data["output"] = {**asdict(self.output), "aws": self.output.aws.to_dict()}
        return data

    @classmethod
    def from_dict(cls, data: object, read_split: SplitFromDict) -> ReadPlan[Split[Any]]:
        """A plan from its JSON, migrated to this release's version first. ``read_split``
        turns one split's JSON into its source's split (``sources.read_plan`` passes the
        registry's; the plan itself knows no sources)."""
        read: dict[str, object] = dict(upgrade(data))
        kind = read.get("source")
        if not isinstance(kind, str):
            raise PlanError(f"plan: 'source' must name a source, got {kind!r}")
        splits = read.get("splits")
        if not isinstance(splits, list):
            raise PlanError(f"plan: 'splits' must be a list, got {type(splits).__name__}")
        read["splits"] = [_split(read_split, kind, s, i) for i, s in enumerate(splits)]
        gaps = read.get("gaps", [])
        if not isinstance(gaps, list):
            raise PlanError(f"plan: 'gaps' must be a list, got {type(gaps).__name__}")
        read["gaps"] = [Gap.from_dict(g) for g in gaps]
        if read.get("interval") is not None:
            read["interval"] = _interval(read["interval"])
        if read.get("output") is not None:
            read["output"] = _output(read["output"])
        plan: ReadPlan[Split[Any]] = build(cls, read, "plan")
        return plan

    @classmethod
    def from_json(cls, text: str | bytes, read_split: SplitFromDict) -> ReadPlan[Split[Any]]:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PlanError(f"plan is not JSON: {exc}") from None
        return cls.from_dict(_mapping(data, "plan"), read_split)

    @property
    def total_records_hint(self) -> int:
        return sum(s.size or 0 for s in self.splits)


def upgrade(data: object) -> JsonObject:
    """``data`` (a plan's JSON) as a plan of ``PLAN_VERSION``, or PlanVersionError."""
    data = dict(_mapping(data, "plan"))
    plan = RecordKind("plan", PLAN_VERSION, MIGRATIONS)  # at call time: a test patches them
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PlanError(f"plan has no valid version ({version!r}): it was not written by "
                        "streamslice")
    if version > PLAN_VERSION:
        raise PlanVersionError(
            f"plan version {version} was written by a newer streamslice; this one reads plan "
            f"versions {plan.readable()}. Run this task where that release is installed, or "
            "clear the run's plan task so this release plans it again")
    if version < plan.oldest_readable():
        why = UNREADABLE.get(version, "no migration from it exists")
        raise PlanVersionError(
            f"plan version {version} is too old for this streamslice (it reads versions "
            f"{plan.readable()}): {why}. Clear the run's plan task so it is planned again")
    return plan.migrate(data, version)


def _output(data: object) -> OutputTarget:
    read: dict[str, object] = dict(_mapping(data, "plan output"))
    if "aws" in read:
        read["aws"] = AwsAuth.from_dict(_mapping(read["aws"], "plan output aws"))
    output: OutputTarget = build(OutputTarget, read, "plan output")
    return output


def _interval(data: object) -> Interval:
    read: dict[str, object] = dict(_mapping(data, "plan interval"))
    if read.get("event_time") is not None:
        read["event_time"] = build(EventTime, read["event_time"], "plan interval event_time")
    interval: Interval = build(Interval, read, "plan interval")
    return interval


def _split(read_split: SplitFromDict, kind: str, data: object, index: int) -> Split[Any]:
    try:
        return read_split(kind, _mapping(data, "a split"))
    except PlanError as exc:
        raise type(exc)(f"plan split {index}: {exc}") from None


def _mapping(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise PlanError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def build(cls: Any, data: Any, what: str) -> Any:
    """A dataclass from a plan's JSON object, exactly: a field it does not have, or a required
    one missing, is a PlanError naming it (within one version the shape is fixed)."""
    data = _mapping(data, what)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise PlanError(f"{what}: unknown field {unknown[0]!r} for plan version "
                        f"{PLAN_VERSION} (fields: {', '.join(known)})")
    missing = [n for n, f in known.items() if n not in data
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise PlanError(f"{what}: field {missing[0]!r} is missing")
    return cls(**data)
