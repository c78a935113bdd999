"""Run figures for the team's monitoring: what each run reports through Airflow's own metrics
(StatsD, OpenTelemetry or Datadog, as the deployment configured ``[metrics]``), so a dashboard
or an alert rule there sees records, dead letters, lag and data age per pipeline without
reading our page. Pure over a run's manifest: the names, kinds and units are held here and by
the unit tests, and listed in the README.

``RunMetrics`` is the run as its commit records it in the output asset's event (what
downstream DAGs and the Streamslice page read): kept in Airflow's database for as long as the
run, so a versioned record (``streamslice.records``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..commit.publishers import Published  # noqa: TC001 - msgspec reads the annotation
from ..records import RecordKind, Versioned
from ..splits import LagUnit, Positions, total_lag  # noqa: TC001 - msgspec reads the annotation

if TYPE_CHECKING:
    from ..commit.manifest import Manifest

PREFIX = "streamslice"  # after Airflow's own prefix: airflow.streamslice.records
Kind = Literal["count", "gauge", "timing"]
STEPS = ("plan", "read", "commit")

# name → (kind, unit, meaning); the README's table is checked against this.
NAMES: dict[str, tuple[Kind, str, str]] = {
    "records": ("count", "records", "records the run published"),
    "dead_letters": ("count", "records", "records that failed to decode, kept as dead letters"),
    "late_records": ("count", "records", "records later than allowed_lateness, published "
                     "flagged late"),
    "lag_records": ("gauge", "records", "Kafka: records behind the high watermark at plan "
                    "time, summed over partitions"),
    "lag_ms": ("gauge", "ms", "Kinesis: MillisBehindLatest at plan time, the worst shard"),
    "data_age": ("gauge", "s", "at commit, how old the newest complete data is: now minus the "
                 "interval's end (interval mode) or the newest record's timestamp"),
    "plan.duration": ("timing", "ms", "time the plan task spent planning"),
    "read.duration": ("timing", "ms", "time the read task's Spark job took"),
    "commit.duration": ("timing", "ms", "time the commit task spent verifying, publishing and "
                        "advancing the checkpoint"),
}


@dataclass
class RunMetrics(Versioned):
    """A committed run's counts, its lag per partition/shard (in ``lag_unit``) and the
    checkpoint's next positions: the asset event's extra. Fields added since the first
    release have defaults, as events written before them lack them."""

    KIND: ClassVar[RecordKind] = RecordKind("run metrics", 1)

    partition: str
    records: int
    dead_letters: int
    late_records: int
    min_timestamp: int | None
    max_timestamp: int | None
    batch: int | None
    plan_id: str
    splits: int
    bytes: int
    lag_records: int | None  # summed over partitions
    millis_behind_latest: int | None  # the worst shard's
    gaps: int
    lag_unit: LagUnit | None = None  # None: the splits' units differ (or an older event)
    lag_by_split: dict[str, int | None] = field(default_factory=dict)
    positions: Positions = field(default_factory=dict)  # the checkpoint's, after it
    early_records: int | None = None  # with an event-time field only
    dead_letter_uri: str | None = None  # where a run's dead letters went (when it had any)
    published: Published | None = None  # where the publish landed
    version: int = 1

    @classmethod
    def of(cls, manifest: Manifest, positions: Positions | None = None) -> RunMetrics:
        splits = manifest.splits
        lag = total_lag(splits)
        units = {s.lag_unit for s in splits}
        return cls(
            partition=manifest.partition, records=manifest.records,
            dead_letters=manifest.dead_letters, late_records=manifest.late_records,
            min_timestamp=manifest.min_timestamp, max_timestamp=manifest.max_timestamp,
            batch=manifest.batch, plan_id=manifest.plan_id, splits=len(splits),
            bytes=sum(s.bytes for s in splits), lag_records=lag["records"],
            millis_behind_latest=lag["ms"], gaps=len(manifest.gaps),
            lag_unit=units.pop() if len(units) == 1 else None,
            lag_by_split={s.key: s.lag for s in splits}, positions=positions or {},
            early_records=manifest.early_records,
            dead_letter_uri=manifest.dead_letter_uri if manifest.dead_letters else None,
            published=manifest.published or None)

    def to_dict(self) -> dict[str, Any]:
        """Its JSON as events have it: what a run did not have is left out."""
        data = super().to_dict()
        if self.early_records is None:
            del data["early_records"]
        if not self.dead_letters:
            del data["dead_letter_uri"]
        if not self.published:
            del data["published"]
        return data


@dataclass(frozen=True)
class Figure:
    name: str  # without the prefix, one of NAMES
    kind: Kind
    value: float

    @property
    def stat(self) -> str:
        return f"{PREFIX}.{self.name}"

    def stat_for(self, pipeline: str) -> str:
        """The name that carries the pipeline, for StatsD without tags (Airflow's "legacy"
        names do the same with a DAG id); dots in it would add levels, so they become ``__``
        as Airflow's own do."""
        return f"{PREFIX}.{self.name}.{pipeline.replace('.', '__')}"


def run_figures(manifest: Manifest, now_ms: int,
                newest_end: int | None = None) -> list[Figure]:
    """The figures of one committed run (``manifest``: what the commit published;
    ``newest_end``: the end of the newest interval the checkpoint holds, so a backfill of an
    old interval does not report the pipeline's data as old)."""
    out = [Figure(name, "count", float(count)) for name, count in (
        ("records", manifest.records), ("dead_letters", manifest.dead_letters),
        ("late_records", manifest.late_records))]
    lag = total_lag(manifest.splits)
    if lag["records"] is not None:
        out.append(Figure("lag_records", "gauge", float(lag["records"])))
    if lag["ms"] is not None:
        out.append(Figure("lag_ms", "gauge", float(lag["ms"])))
    age = data_age_ms(manifest, now_ms, newest_end)
    if age is not None:
        out.append(Figure("data_age", "gauge", round(age / 1000, 3)))
    return out


def data_age_ms(manifest: Manifest, now_ms: int,
                newest_end: int | None = None) -> int | None:
    """How old the newest complete data is: the newest interval's end (an interval is complete
    to its end even when it held nothing), else the newest record's timestamp; None for a
    batch that read nothing."""
    if manifest.interval is not None:
        newest: int | None = max(manifest.interval.end, newest_end or 0)
    else:
        newest = manifest.max_timestamp
    return max(0, now_ms - int(newest)) if newest is not None else None


def step_timing(step: str, seconds: float) -> Figure:
    if step not in STEPS:
        raise ValueError(f"{step!r} is not one of {STEPS}")
    return Figure(f"{step}.duration", "timing", round(seconds * 1000, 3))
