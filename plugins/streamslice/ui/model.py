"""What the page shows, computed from plain rows: a pipeline's runs with the metrics each commit
recorded (the asset event's extra), the intervals its schedule expects, its checkpoint; and
what an operator reads first: one headline sentence, the lag per partition over time with the
top few named and the rest summed up, and where each partition's position stands."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ..monitoring.alerts import duration_text
from ..sources import SOURCES, lag_unit, position_text, source_class
from ..splits import lag_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..commit.checkpoint import Checkpoint
    from ..monitoring.alerts import SentAlert
    from ..monitoring.metrics import RunMetrics
    from ..splits import LagUnit, Positions, PositionText, Split

# Cell states of the coverage strip, in legend order.
STATES = ("published", "late", "empty", "failed", "running", "missing")
# States an operator acts on: a backfill creates the missing runs and re-runs the failed ones.
GAPS = ("missing", "failed")
TOP_SPLITS = 8  # lag lines named in the legend; the rest are one "others" line
OVERDUE_AFTER = 10 * 60_000  # a scheduled run this late means the scheduler is not running it


# A value of the output asset's extra: Airflow keeps the extra as JSON, and what the page
# and downstream DAGs read there are plain facts (a file, a kind, a limit, a flag).
ExtraValue = str | int | float | bool | None


@dataclass(frozen=True)
class AssetExtra:
    """What a pipeline's output asset carries in Airflow (its definition's ``extra``) for the
    page: the pipeline's file, its source's kind, its freshness limit, and what the source
    adds (``Source.asset_extra``: Kinesis says whether it reads with EFO). No client
    settings, no secrets."""

    pipeline_file: str | None = None
    source: str | None = None
    freshness_ms: int | None = None  # alerts.freshness: the page marks older data stale
    source_extra: dict[str, ExtraValue] = field(default_factory=dict)

    def to_dict(self) -> dict[str, ExtraValue]:
        out = {**self.source_extra, "pipeline_file": self.pipeline_file,
               "source": self.source}
        if self.freshness_ms is not None:
            out["freshness_ms"] = self.freshness_ms
        return out

    @classmethod
    def read(cls, extra: Mapping[str, Any] | None) -> AssetExtra:
        """An asset's extra as Airflow keeps it (anything missing counts as unset)."""
        rest = dict(extra or {})
        return cls(pipeline_file=rest.pop("pipeline_file", None), source=rest.pop("source", None),
                   freshness_ms=rest.pop("freshness_ms", None), source_extra=rest)


@dataclass
class Run:
    run_id: str
    state: str  # Airflow's DagRun state: queued, running, success, failed
    start: int | None = None  # data interval [start, end) in epoch ms (interval mode)
    end: int | None = None
    started_at: int | None = None  # when it ran, epoch ms
    ended_at: int | None = None
    metrics: RunMetrics | None = None  # what the commit recorded (tasks.run_metrics)
    failed_tasks: list[str] = field(default_factory=list)  # tasks that ran and failed
    upstream_failed: list[str] = field(default_factory=list)  # not run: a task before failed
    logged: list[str] = field(default_factory=list)  # failed tasks that started: logs exist
    reason: str | None = None  # why it failed, one sentence with what to do (from its alert)
    logical_date: int | None = None  # Airflow's: what its backfill finds the run by

    @property
    def records(self) -> int | None:
        return self.metrics.records if self.metrics else None

    @property
    def dead_letters(self) -> int:
        return self.metrics.dead_letters if self.metrics else 0

    @property
    def late_records(self) -> int:
        """Records flagged for lying outside the interval's bounds: late, or early (by an
        event-time field)."""
        m = self.metrics
        return m.late_records + (m.early_records or 0) if m else 0

    @property
    def lag(self) -> int | None:
        """Records behind (Kafka) or milliseconds behind (Kinesis) when the run was planned."""
        m = self.metrics
        if m is None:
            return None
        return m.lag_records if m.lag_records is not None else m.millis_behind_latest

    @property
    def lag_unit(self) -> LagUnit | None:
        m = self.metrics
        if m is None:
            return None
        if m.lag_unit is not None:
            return m.lag_unit
        if m.lag_records is not None:
            return "records"
        return "ms" if m.millis_behind_latest is not None else None

    @property
    def lag_text(self) -> str:
        """``1,234 records`` or ``2.5 s behind`` (``splits.lag_text``)."""
        return lag_text(self.lag, self.lag_unit)

    @property
    def status(self) -> str:
        if self.state == "success":
            if self.records == 0:
                return "empty"
            return "late" if self.late_records else "published"
        return "failed" if self.state == "failed" else "running"


FAILURE_ALERTS = ("run_failed", "data_loss")


def explain_failures(runs: list[Run], alerts_sent: list[SentAlert]) -> None:
    """Give each failed run one sentence: the error the failed task recorded (its
    ``run_failed``/``data_loss`` alert: ``alerting.record``) and what to do about an error of
    that kind, then the tasks that did not run because of it. Without a recorded error (a
    task killed before its failure callback ran) it says so rather than guess."""
    from ..errors import advice
    recorded: dict[str, list[SentAlert]] = {}
    for sent in alerts_sent:
        if sent.kind in FAILURE_ALERTS:
            recorded.setdefault(str(sent.run_id), []).append(sent)
    for run in runs:
        if run.state != "failed":
            continue
        found = recorded.get(run.run_id, [])
        # The failed task's own alert (a retry's or a teardown's may come later), else any.
        own = [a for a in found if a.task in run.failed_tasks] or found
        alert = own[0] if own else None
        if alert:
            lines = alert.message.splitlines() or [""]
            what = lines[0][:240].rstrip(". ")
            run.reason = f"{what}. {advice(alert.error_kind)}"
        else:
            tasks = ", ".join(run.failed_tasks) or "A task"
            run.reason = (f"{tasks} failed and recorded no error (it may have been killed "
                          "before it could): open its log, fix the cause, then re-run.")
        if run.upstream_failed:
            run.reason += f" Not run because of it: {', '.join(run.upstream_failed)}."


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


@dataclass
class LagChart:
    """Lag at plan time per column of the strip: the ``top`` partitions/shards by their
    highest lag in view, one line each, and every other one drawn as a band from the lowest to
    the highest of them (a sum of hundreds of partitions would flatten the named lines);
    ``total`` folds all of them: summed for records, the worst for time behind (a sum of
    delays means nothing)."""
    unit: LagUnit
    lines: dict[str, list[float | None]]  # split key → value per column (None: no figure)
    low: list[float | None]  # the others' band per column
    high: list[float | None]
    others_count: int
    total: list[float | None]
    latest: int | None = None  # the column of the run planned last (tile, legend, positions)
    measured_at: int | None = None  # when that run was planned (it started), epoch ms

    @property
    def latest_total(self) -> float | None:
        if self.latest is not None:
            return self.total[self.latest]
        return next((v for v in reversed(self.total) if v is not None), None)

    def at_latest(self, values: list[float | None]) -> float | None:
        """A line's figure at the run planned last (not the newest interval: a backfill of an
        old interval is planned after it, and its lag is the one measured last)."""
        if self.latest is not None:
            return values[self.latest]
        return next((v for v in reversed(values) if v is not None), None)


def lag_chart(cells: list[Cell], top: int = TOP_SPLITS) -> LagChart | None:
    columns: list[dict[str, float]] = []  # per column: split key → lag
    peak: dict[str, float] = {}
    unit: LagUnit = "records"
    latest: tuple[int, int] | None = None  # (started_at, column) of the run planned last
    for i, cell in enumerate(cells):
        run = cell.run
        by_split = run.metrics.lag_by_split if run and run.metrics else {}
        if by_split and run:
            unit = run.lag_unit or unit
            if latest is None or (run.started_at or 0) >= latest[0]:
                latest = (run.started_at or 0, i)
        values = {k: float(v) for k, v in by_split.items() if v is not None}
        for key, value in values.items():
            if value > peak.get(key, -1.0):
                peak[key] = value
        columns.append(values)
    if not peak:
        return None
    named = sorted(peak, key=lambda k: (-peak[k], k))[:top]
    last = {k: next((c[k] for c in reversed(columns) if k in c), 0.0) for k in named}
    named.sort(key=lambda k: (-last[k], -peak[k], k))  # shown furthest behind now first
    lines: dict[str, list[float | None]] = {k: [c.get(k) for c in columns] for k in named}
    low: list[float | None] = []
    high: list[float | None] = []
    total: list[float | None] = []
    folded = max if unit == "ms" else sum
    for values in columns:
        rest = [v for k, v in values.items() if k not in lines]
        low.append(min(rest) if rest else None)
        high.append(max(rest) if rest else None)
        total.append(float(folded(values.values())) if values else None)
    return LagChart(unit=unit, lines=lines, low=low, high=high,
                    others_count=len(peak) - len(named), total=total,
                    latest=latest[1] if latest else None,
                    measured_at=latest[0] if latest and latest[0] else None)


Level = Literal["ok", "warn", "bad", "idle"]


@dataclass
class Headline:
    level: Level
    text: str


def scheduler_text(last_heartbeat: str) -> str:
    """What a stopped scheduler means for a pipeline, said on its page and the overview."""
    return (f"Airflow's scheduler is not running (last heard from {last_heartbeat}): no run "
            "starts, and the streamslice_freshness watchdog does not check, until it is back. "
            "Stale data is still marked here, and the streamslice freshness command, run from "
            "cron, still alerts.")


def headline(cells: list[Cell], mode: str, paused: bool, span: Any = lambda c: "",
             manual: bool = False, overdue: str | None = None,
             stale: str | None = None, scheduler: str | None = None) -> Headline:
    """The one sentence an operator reads first: what needs doing, else that all is well.
    ``span(cell)`` names a cell's interval or batch in words; ``manual``: no schedule;
    ``scheduler``: when Airflow's scheduler, stopped now, was last heard from, said first
    (it is why a run is overdue); ``overdue``: since when Airflow's next scheduled run is
    overdue (``Overview.overdue``), said first otherwise: nothing new arrives until that is
    fixed; ``stale``: the data's age past its freshness limit, in words, said next."""
    told = headline_in_view(cells, mode, paused, span, manual)
    first = []
    if scheduler is not None:
        first.append(scheduler_text(scheduler))
    elif overdue is not None:
        first.append(f"Airflow was due to start the next run at {overdue} and has not: is its "
                     "scheduler running (and not out of pool slots)?")
    if stale is not None:
        first.append(f"The newest complete data is {stale}.")
    if not first:
        return told
    said = " ".join(first)
    return Headline("bad", f"{said} {told.text}" if told.level != "ok" else said)


def headline_in_view(cells: list[Cell], mode: str, paused: bool, span: Any,
                     manual: bool) -> Headline:
    def names(state: str, limit: int = 3) -> str:
        found = [span(c) for c in cells if c.status == state]
        more = f" and {len(found) - limit} more" if len(found) > limit else ""
        return ", ".join(found[:limit]) + more

    def many(n: int) -> str:
        if mode == "interval":
            return f"{n} interval{'s' if n != 1 else ''}"
        return f"{n} batch{'es' if n != 1 else ''}"

    count = {s: sum(c.status == s for c in cells) for s in STATES}
    paused_note = " The DAG is paused: unpause it in Airflow to let runs start." if paused else ""
    if not cells or (mode != "interval" and all(c.run is None for c in cells)):
        start = " It has no schedule: trigger a run in Airflow." if manual else ""
        return Headline("idle", f"No runs yet.{paused_note or start}")
    gaps = count["missing"] + count["failed"]
    if mode == "interval" and gaps:
        parts = [f"{count[s]} {s} ({names(s)})" for s in GAPS if count[s]]
        return Headline("bad", f"{many(gaps)} without data: {'; '.join(parts)}. Select them "
                        f"on the strip to start a backfill.{paused_note}")
    latest = cells[-1]
    if mode != "interval" and latest.status == "failed":
        reason = f" {latest.run.reason}" if latest.run and latest.run.reason else ""
        return Headline("bad", f"The latest batch failed.{reason} Re-run it once the cause "
                        f"is fixed: the next batch waits for it.{paused_note}")
    if count["running"]:
        return Headline("warn", f"{many(count['running'])} running or queued "
                        f"({names('running')}).{paused_note}")
    if count["late"]:
        return Headline("warn", f"{many(count['late'])} got late records ({names('late')}): "
                        "published with the run that read them and flagged late, not lost."
                        f"{paused_note}")
    empty = f" ({count['empty']} empty)" if count["empty"] else ""
    done = count["published"] + count["empty"]
    if count["failed"]:  # incremental: a failed batch left the checkpoint where it was
        return Headline("ok", f"{done} of {many(len(cells))} in view published{empty}; "
                        f"{count['failed']} failed earlier ({names('failed')}) and the batch "
                        f"after it read its records: nothing is missing.{paused_note}")
    return Headline("ok", f"All {many(done)} in view are published{empty}.{paused_note}")


def complete_until(cells: list[Cell]) -> int | None:
    """The end of the last interval before the first hole or failure in view (data is
    complete up to there), or the end of the newest when there is none."""
    done = None
    for cell in cells:
        if cell.status in GAPS or cell.status == "running":
            break
        done = cell.end
    return done


class CheckpointRow(TypedDict):
    """One partition's (shard's) row of the checkpoint table (``checkpoint_rows``)."""

    split: str
    next: PositionText
    planned_end: PositionText
    lag: int | None
    lag_unit: LagUnit | None
    lag_text: str


def checkpoint_rows(checkpoint: Checkpoint | None, splits: list[dict[str, Any]],
                    kind: str | None, last: Run | None = None) -> list[CheckpointRow]:
    """The checkpoint's next position per partition/shard, next to where the latest plan
    ended it (``splits``: the plan's JSON splits) and its lag then (the ``last`` run's figure,
    in its unit), furthest behind first. Positions are ``splits.PositionText`` (short for the
    cell, full to copy)."""
    positions = checkpoint.positions if checkpoint else {}
    planned = {s.key: s for s in _typed_splits(kind, splits)}
    lags = last.metrics.lag_by_split if last and last.metrics else {}
    unit = last.lag_unit if last else lag_unit(kind)
    rows: list[CheckpointRow] = []
    for key in sorted(set(positions) | set(planned), key=_natural):
        split = planned.get(key)
        lag = lags.get(key, split.lag if split else None)
        rows.append(CheckpointRow(split=key, next=position_text(kind, positions.get(key)),
                                  planned_end=position_text(kind, split.end if split else None),
                                  lag=lag, lag_unit=unit, lag_text=lag_text(lag, unit)))
    return sorted(rows, key=lambda r: -(r["lag"] or 0))  # stable: partition order within


def _natural(key: str) -> tuple[str, int]:
    head, _, tail = key.rpartition(":")
    return (head, int(tail)) if tail.isdigit() else (key, 0)


def _typed_splits(kind: str | None, splits: list[dict[str, Any]]) -> list[Split[Any]]:
    if kind not in SOURCES:
        return []
    read = source_class(kind).serializer().from_dict
    out = []
    for data in splits:
        try:
            out.append(read(data))
        except (TypeError, ValueError, KeyError):  # a plan of another release: left out
            continue
    return out


def positions_text(kind: str | None, positions: Positions,
                   limit: int | None = None) -> list[tuple[str, PositionText]]:
    """A run's next positions (the first ``limit``), in partition order, each rendered by its
    source."""
    keys = sorted(positions, key=_natural)[:limit]
    return [(k, position_text(kind, positions[k])) for k in keys]


def schedule_words(summary: str, description: str = "") -> str:
    """The schedule as a person says it: Airflow's own description of a cron schedule (the
    cron-descriptor text its UI shows, "Every hour"), else a fixed delta's summary
    (``str(timedelta)``: ``0:00:10``, ``1 day, 0:00:00``) said as "Every 10 seconds"; any
    other summary as it is."""
    if description:
        return description
    match = re.fullmatch(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d)(?:\.\d+)?", summary.strip())
    if not match:
        return summary
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute"), (seconds, "second")]
    said = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n]
    if len(said) == 1 and said[0].startswith("1 "):
        return f"Every {said[0][2:]}"
    return f"Every {' '.join(said)}" if said else summary


@dataclass
class Overview:
    """One row of the overview page."""
    dag_id: str
    source: str
    mode: str
    schedule: str  # Airflow's summary: a cron expression, a delta, or "manual"
    paused: bool
    description: str = ""
    last: Run | None = None
    alerts: int = 0
    config_error: bool = False
    next_due: int | None = None  # when Airflow is to create the next scheduled run (epoch ms)
    schedule_text: str = ""  # the schedule in words (``schedule_words``)
    overdue_since: int | None = None  # set by ``overdue``'s caller
    attention: list[str] = field(default_factory=list)  # ``needs_attention``; none: all well
    complete_to: int | None = None  # the newest complete data's end (``alerts.complete_to``)
    freshness: int | None = None  # ms it may be old (``alerts.freshness``), if set

    def data_age(self, now_ms: int) -> int | None:
        return max(0, now_ms - self.complete_to) if self.complete_to is not None else None

    def stale(self, now_ms: int) -> bool:
        age = self.data_age(now_ms)
        return self.freshness is not None and age is not None and age > self.freshness

    def overdue(self, now_ms: int, in_flight: Callable[[], bool]) -> int | None:
        """Since when the next scheduled run is overdue (more than ``OVERDUE_AFTER``), for a
        DAG that is not paused and has no run running (``in_flight``; one may hold the next
        back, as max_active_runs does; runs left queued are the stall's symptom, not its
        excuse): the scheduler is not running it."""
        if self.paused or self.next_due is None or now_ms - self.next_due <= OVERDUE_AFTER:
            return None
        return None if in_flight() else self.next_due


def needs_attention(row: Overview, cells: list[Cell], recent_alerts: int,
                    now_ms: int) -> list[str]:
    """What about a pipeline needs a person, in the few words the overview marks it with,
    most urgent first (``cells``: its strip's default range; ``recent_alerts``: alerts sent
    since that range began). Empty: nothing does."""
    out = []
    if row.config_error:
        out.append("invalid pipeline file")
    if row.overdue_since is not None:
        out.append("overdue")
    if row.stale(now_ms):
        out.append(f"stale: {duration_text(row.data_age(now_ms) or 0)} old")
    failed = sum(c.status == "failed" for c in cells)
    latest = next((c for c in reversed(cells) if c.run is not None), None)
    failing = failed if row.mode == "interval" else \
        (failed if latest is not None and latest.status == "failed" else 0)
    if failing:
        out.append(f"{failing} failed run{'s' if failing != 1 else ''}")
    missing = sum(c.status == "missing" for c in cells)
    if missing:
        out.append(f"{missing} interval{'s' if missing != 1 else ''} missing")
    if row.paused and row.next_due is not None and row.next_due <= now_ms:
        out.append("paused with runs due")
    if recent_alerts:
        out.append(f"{recent_alerts} alert{'s' if recent_alerts != 1 else ''} sent")
    return out
