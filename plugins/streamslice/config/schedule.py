"""Interval arithmetic for a pipeline's schedule (cron, preset or fixed duration), as Airflow's
CronDataIntervalTimetable / DeltaDataIntervalTimetable lay intervals out."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..timestamps import parse_duration_ms

if TYPE_CHECKING:
    from ..planning.plan import Interval
    from .pipeline import PipelineConfig

PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
           "@annually": "0 0 1 1 *"}


def schedule_delta_ms(schedule: str) -> int | None:
    """A schedule given as a duration ("15m", "10s") → milliseconds, else None (cron)."""
    try:
        return parse_duration_ms(schedule) or None
    except ValueError:
        return None


def interval_width_ms(schedule: str, at_ms: int) -> int:
    """The length of the schedule's interval that starts at or after ``at_ms``."""
    from croniter import croniter
    delta = schedule_delta_ms(schedule)
    if delta:
        return delta
    it = croniter(PRESETS.get(schedule, schedule),
                  datetime.fromtimestamp(at_ms / 1000 - 1, tz=timezone.utc))
    first = it.get_next(datetime)
    return int((it.get_next(datetime) - first).total_seconds() * 1000)


def interval_containing(cfg: PipelineConfig, at_ms: int) -> Interval:
    """The schedule's interval ``[start, end)`` that contains ``at_ms``."""
    assert cfg.schedule is not None
    return cfg.interval(*span_containing(cfg.schedule, cfg.start_date, at_ms))


def span_containing(schedule: str, start_date: int | None, at_ms: int) -> tuple[int, int]:
    """``(start, end)`` of the schedule's interval that contains ``at_ms``."""
    delta = schedule_delta_ms(schedule)
    if delta:
        base = start_date or 0
        start = base + (at_ms - base) // delta * delta
        return start, start + delta
    from croniter import croniter
    it = croniter(PRESETS.get(schedule, schedule),
                  datetime.fromtimestamp(at_ms / 1000 + 0.001, tz=timezone.utc))
    start = int(it.get_prev(datetime).timestamp() * 1000)
    return start, start + interval_width_ms(schedule, start)


def neighbours(schedule: str, start_date: int | None, start: int, end: int) -> tuple[int, int]:
    """Where the schedule's interval before ``[start, end)`` starts and the one after it
    ends: a month's neighbours are months, a Friday's interval of a weekday cron runs to
    Monday."""
    return (span_containing(schedule, start_date, start - 1)[0],
            span_containing(schedule, start_date, end)[1])


def intervals_between(cfg: PipelineConfig, start_ms: int, end_ms: int) -> list[Interval]:
    """Every interval that overlaps ``[start_ms, end_ms)``."""
    if end_ms <= start_ms:
        raise ValueError("the range is empty or reversed: --to must be after --from")
    out, iv = [], interval_containing(cfg, start_ms)
    while iv.start < end_ms:
        out.append(iv)
        iv = interval_containing(cfg, iv.end)
    return out


def interval_starts(schedule: str, start_ms: int, count: int) -> list[int]:
    """The starts of the schedule's first ``count`` intervals from ``start_ms``."""
    delta = schedule_delta_ms(schedule)
    if delta:
        return [start_ms + i * delta for i in range(count)]
    from croniter import croniter
    it = croniter(PRESETS.get(schedule, schedule),
                  datetime.fromtimestamp(start_ms / 1000 - 1, tz=timezone.utc))
    return [int(it.get_next(datetime).timestamp() * 1000) for _ in range(count)]
