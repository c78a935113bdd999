"""Run figures for the team's monitoring: what each run reports through Airflow's own metrics
(StatsD, OpenTelemetry or Datadog, as the deployment configured ``[metrics]``), so a dashboard
or an alert rule there sees records, dead letters, lag and data age per pipeline without
reading our page. Pure over a run's manifest: the names, kinds and units are held here and by
the unit tests, and listed in the README."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .splits import total_lag

if TYPE_CHECKING:
    from .commit.manifest import Manifest

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
