"""Axes a person reads at a glance: times in the pipeline's time zone with ticks on round
boundaries (every 6 hours, every day…), and tick values that fit (``37.4k``, ``2.5 s``).
Values in sentences and tables are ``splits.lag_text``'s."""
from __future__ import annotations

import math
from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MIN, HOUR, DAY = 60_000, 3_600_000, 86_400_000
# Tick steps a reader expects, smallest first.
STEPS = (1000, 5000, 15_000, 30_000, MIN, 5 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR,
         3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 7 * DAY, 30 * DAY, 365 * DAY)


def zone(name: str | None) -> tzinfo:
    """The named IANA time zone; UTC when none is given or it is unknown."""
    if name and name not in ("UTC", "Etc/UTC", "Z"):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return timezone.utc


def zone_label(tz: tzinfo, at_ms: int | None = None) -> str:
    """``UTC``, or the zone's abbreviation at ``at_ms`` (``CEST``)."""
    if tz is timezone.utc:
        return "UTC"
    when = datetime.fromtimestamp((at_ms or 0) / 1000, tz)
    return when.tzname() or str(tz)


def local(ms: int, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz)


def when(ms: int | None, tz: tzinfo, seconds: bool = False) -> str:
    """``2024-05-01 03:00`` in ``tz`` (no zone name: the page says it once); with seconds
    when asked or when the moment is not on a whole minute (a 10-second schedule)."""
    if ms is None:
        return "-"
    seconds = seconds or ms % MIN != 0
    return local(ms, tz).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def short(ms: int | None, tz: tzinfo) -> str:
    """``May 1 20:00`` (``May 1 20:00:10`` off the minute): a moment in a sentence."""
    if ms is None:
        return "-"
    return local(ms, tz).strftime("%b %-d %H:%M:%S" if ms % MIN else "%b %-d %H:%M")


def span(start: int | None, end: int | None, tz: tzinfo) -> str:
    """``2024-05-01 02:00 → 03:00`` (the date once when both ends share it)."""
    if start is None:
        return "-"
    first = when(start, tz)
    if end is None:
        return first
    last = when(end, tz)
    if last[:10] == first[:10]:
        last = last[11:]
    return f"{first} → {last}"


def time_ticks(starts: list[int | None], tz: tzinfo, width: float,
               min_gap: float = 70.0) -> list[tuple[int, str, str]]:
    """Which columns get a label: ``(index, time, date or "")`` for columns that start on a
    round boundary in ``tz``, spaced at least ``min_gap`` pixels apart; the date is shown on
    the first label and wherever it changes. Columns are equally wide (``width / n``)."""
    n = len(starts)
    known = [s for s in starts if s is not None]
    if n == 0 or not known:
        return []
    per = width / n
    every = max(1, math.ceil(min_gap / per))  # columns between two labels, at least
    spread = (known[-1] - known[0]) / max(1, len(known) - 1)  # typical column width in time
    if spread <= 0:
        picks = list(range(0, n, every))
    else:
        step = next((s for s in STEPS if s >= spread * every), STEPS[-1])
        picks, last = [], -every
        for i, start in enumerate(starts):
            if start is not None and i - last >= every and _round(start, step, tz):
                picks.append(i)
                last = i
        if len(picks) < 2:  # nothing round enough (irregular batches): evenly spaced
            picks = list(range(0, n, every))
    out, shown_date = [], None
    for i in picks:
        start = starts[i]
        if start is None:
            continue
        at = local(start, tz)
        day = at.strftime("%b %-d")
        clock = at.strftime("%H:%M:%S" if at.second else "%H:%M")
        out.append((i, clock, day if day != shown_date else ""))
        shown_date = day
    return out


def _round(ms: int, step: int, tz: tzinfo) -> bool:
    at = local(ms, tz)
    if step >= DAY:
        if at.hour or at.minute or at.second:
            return False
        days = step // DAY
        return days == 1 or (days == 7 and at.weekday() == 0) or (days >= 30 and at.day == 1
                                                                  and (days < 365
                                                                       or at.month == 1))
    of_day = (at.hour * HOUR + at.minute * MIN + at.second * 1000)
    return of_day % step == 0 and at.microsecond < 1000


def nice_top(value: float, least: float = 1.0) -> float:
    """The smallest round number at or above ``value`` (1, 2, 2.5, 5 × 10^k), at least
    ``least`` (an axis of zeros still reads: 0 to 10 records, 0 to 1 s)."""
    value = max(value, least)
    if value <= 0:
        return 1.0
    exp: float = 10 ** math.floor(math.log10(value))  # int ** int is typed Any (sign)
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * exp:
            return m * exp
    return 10 * exp


def compact(value: float) -> str:
    v = abs(value)
    if v >= 1e9:
        return f"{value / 1e9:.1f}G"
    if v >= 1e6:
        return f"{value / 1e6:.1f}M"
    if v >= 1e4:
        return f"{value / 1e3:.1f}k"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def duration(ms: float) -> str:
    if ms == 0:
        return "0"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < MIN:
        return f"{ms / 1000:.1f} s"
    if ms < HOUR:
        return f"{ms / MIN:.1f} min"
    if ms < DAY:
        return f"{ms / HOUR:.1f} h"
    return f"{ms / DAY:.1f} d"
