"""Interval arithmetic for a pipeline's schedule (cron, preset or fixed duration), as Airflow's
CronDataIntervalTimetable / DeltaDataIntervalTimetable lay intervals out."""
from datetime import datetime, timezone

from .config import PRESETS, interval_width_ms, schedule_delta_ms
from .plan import Interval


def interval_containing(cfg, at_ms):
    """The schedule's interval ``[start, end)`` that contains ``at_ms``."""
    delta = schedule_delta_ms(cfg.schedule)
    if delta:
        base = cfg.start_date or 0
        start = base + (at_ms - base) // delta * delta
        return Interval(start, start + delta, cfg.allowed_lateness)
    from croniter import croniter
    it = croniter(PRESETS.get(cfg.schedule, cfg.schedule),
                  datetime.fromtimestamp(at_ms / 1000 + 0.001, tz=timezone.utc))
    start = int(it.get_prev(datetime).timestamp() * 1000)
    return Interval(start, start + interval_width_ms(cfg.schedule, start), cfg.allowed_lateness)


def intervals_between(cfg, start_ms, end_ms):
    """Every interval that overlaps ``[start_ms, end_ms)``."""
    if end_ms <= start_ms:
        raise ValueError("the range is empty or reversed: --to must be after --from")
    out, iv = [], interval_containing(cfg, start_ms)
    while iv.start < end_ms:
        out.append(iv)
        iv = interval_containing(cfg, iv.end)
    return out
