"""What the page shows, computed from plain rows: a pipeline's runs with the metrics each commit
recorded (the asset event's extra), the intervals its schedule expects, its checkpoint."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..sources import SOURCES, lag_unit, position_text, source_class
from ..splits import LAG_UNITS, lag_text

if TYPE_CHECKING:
    from ..splits import LagUnit, Split

# Cell states of the coverage strip, in legend order.
STATES = ("published", "late", "empty", "failed", "running", "missing")


@dataclass
class Run:
    run_id: str
    state: str  # Airflow's DagRun state: queued, running, success, failed
    start: int | None = None  # data interval [start, end) in epoch ms (interval mode)
    end: int | None = None
    started_at: int | None = None  # when it ran, epoch ms
    ended_at: int | None = None
    metrics: dict[str, Any] | None = None  # what the commit recorded (tasks.run_metrics)
    failed_tasks: list[str] = field(default_factory=list)

    @property
    def records(self) -> int | None:
        return self.metrics.get("records") if self.metrics else None

    @property
    def dead_letters(self) -> int:
        return (self.metrics or {}).get("dead_letters") or 0

    @property
    def lag(self) -> int | None:
        """How far behind the run started, in ``lag_unit``: records behind the end of the
        partitions at plan time, or milliseconds behind the tip as the readers saw it."""
        m = self.metrics or {}
        return m.get("lag_records") if m.get("lag_records") is not None \
            else m.get("millis_behind_latest")

    @property
    def lag_unit(self) -> LagUnit | None:
        m = self.metrics or {}
        unit = m.get("lag_unit")
        if unit in LAG_UNITS:
            return cast("LagUnit", unit)
        if m.get("lag_records") is not None:
            return "records"
        return "ms" if m.get("millis_behind_latest") is not None else None

    @property
    def lag_text(self) -> str:
        """``1,234 records`` or ``2.5 s behind`` (``splits.lag_text``)."""
        return lag_text(self.lag, self.lag_unit)

    @property
    def status(self) -> str:
        if self.state == "success":
            if self.records == 0:
                return "empty"
            return "late" if (self.metrics or {}).get("late_records") else "published"
        return "failed" if self.state == "failed" else "running"


@dataclass
class Cell:
    start: int | None
    end: int | None
    status: str
    run: Run | None = None

    @property
    def records(self) -> int | None:
        return self.run.records if self.run and self.status != "failed" else None


def _deciding(runs: list[Run]) -> Run:
    """Of several runs of one interval: one in flight, else the newest that published, else
    the newest (a failed re-run does not undo an earlier publish)."""
    newest_first = sorted(runs, key=lambda r: r.started_at or 0, reverse=True)
    for wanted in (("queued", "running"), ("success",)):
        for run in newest_first:
            if run.state in wanted:
                return run
    return newest_first[0]


def coverage(runs: list[Run], intervals: list[tuple[int, int]] | None) -> list[Cell]:
    """One cell per expected interval (interval mode) or per run (incremental), oldest first.
    An expected interval without a run is ``missing``: a hole in the data."""
    if intervals is None:
        ordered = sorted(runs, key=lambda r: r.started_at or 0)
        return [Cell(r.started_at, r.ended_at, r.status, r) for r in ordered]
    by_start: dict[int, list[Run]] = {}
    for each in runs:
        if each.start is not None:
            by_start.setdefault(each.start, []).append(each)
    cells = []
    for start, end in intervals:
        found = by_start.get(start)
        run: Run | None = _deciding(found) if found else None
        cells.append(Cell(start, end, run.status if run else "missing", run))
    return cells


def lag_series(runs: list[Run]) -> dict[str, list[tuple[int, float]]]:
    """Lag per partition or shard over the runs (x = the run's position, oldest first)."""
    series: dict[str, list[tuple[int, float]]] = {}
    ordered = sorted(runs, key=lambda r: r.started_at or 0)
    for i, run in enumerate(ordered):
        for key, value in ((run.metrics or {}).get("lag_by_split") or {}).items():
            if value is not None:
                series.setdefault(key, []).append((i, float(value)))
    return series


def checkpoint_rows(checkpoint: dict[str, Any] | None, splits: list[dict[str, Any]],
                    kind: str | None, last: Run | None = None) -> list[dict[str, Any]]:
    """The checkpoint's next position per partition/shard, next to where the latest plan
    ended it (``splits``: the plan's JSON splits) and its lag then (the ``last`` run's figure,
    in its unit). Positions are ``splits.PositionText`` (short for the cell, full to copy)."""
    positions = (checkpoint or {}).get("positions") or {}
    planned = {s.key: s for s in _typed_splits(kind, splits)}
    lags = ((last.metrics or {}).get("lag_by_split") or {}) if last else {}
    unit = last.lag_unit if last else lag_unit(kind)
    rows = []
    for key in sorted(set(positions) | set(planned)):
        split = planned.get(key)
        lag = lags.get(key, split.lag if split else None)
        rows.append({"split": key, "next": position_text(kind, positions.get(key)),
                     "planned_end": position_text(kind, split.end if split else None),
                     "lag": lag, "lag_unit": unit, "lag_text": lag_text(lag, unit)})
    return rows


def _typed_splits(kind: str | None, splits: list[dict[str, Any]]) -> list[Split]:
    if kind not in SOURCES:
        return []
    read = source_class(kind).split_from_dict
    out = []
    for data in splits:
        try:
            out.append(read(data))
        except (TypeError, ValueError, KeyError):  # a plan of another release: left out
            continue
    return out


@dataclass
class Overview:
    """One row of the overview page."""
    dag_id: str
    source: str
    mode: str
    schedule: str
    paused: bool
    description: str = ""
    last: Run | None = None
    alerts: int = 0
    config_error: bool = False
