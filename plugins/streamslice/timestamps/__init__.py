"""Timestamps and durations as users write them, turned into epoch milliseconds.

Kafka speaks epoch milliseconds; Kinesis users (and Flink's Kinesis consumer) write epoch
seconds with a fraction (``1459799926.480``) or a date string in a Java SimpleDateFormat
pattern (default ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX``).
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

# Symbolic bounds resolved per DAG run.
INTERVAL_START = "data_interval_start"
INTERVAL_END = "data_interval_end"
SYMBOLS = (INTERVAL_START, INTERVAL_END)

DEFAULT_JAVA_DATE_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def to_ms(dt: datetime) -> int:
    """An aware datetime (naive means UTC) as epoch milliseconds."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * 1000))


def from_ms(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def iso(ms: float) -> str:
    """Epoch ms as an ISO-8601 UTC string with milliseconds."""
    return from_ms(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> int:
    """ISO-8601 text (``Z`` or an offset; naive means UTC) as epoch ms."""
    try:
        return to_ms(datetime.fromisoformat(text.strip()))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 timestamp "
                         "(e.g. 2024-05-01T00:00:00Z)") from None


def parse_timestamp_ms(value: Any) -> int:
    """Epoch milliseconds (int, or digits) or ISO-8601 text → epoch ms."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a timestamp")
    if isinstance(value, int):
        return _check_range(value, value)
    if isinstance(value, datetime):
        return to_ms(value)
    if isinstance(value, str):
        if re.fullmatch(r"\d+", value.strip()):
            return _check_range(int(value), value)
        return parse_iso(value)
    raise ValueError(f"{value!r} is not a timestamp: use epoch milliseconds or ISO-8601")


def parse_epoch_seconds_ms(value: Any) -> int:
    """Epoch seconds with an optional fraction (Flink's ``1459799926.480``) → epoch ms."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not epoch seconds") from None
    if seconds < 0:
        raise ValueError(f"{value!r} is negative; epoch seconds must be >= 0")
    return _check_range(int(round(seconds * 1000)), value)


def parse_flexible_ms(value: Any) -> int:
    """For CLI and backfill ranges: ISO-8601, epoch seconds (<= 11 digits) or epoch ms."""
    text = str(value).strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        if "." in text or len(text) <= 11:
            return parse_epoch_seconds_ms(text)
        return _check_range(int(text), value)
    return parse_iso(text)


def _check_range(ms: int, original: Any) -> int:
    # Between 1970 and 2200: catches seconds given where milliseconds are expected and vice versa.
    if not 0 <= ms < 7_258_118_400_000:
        raise ValueError(f"{original!r} is out of range for epoch milliseconds")
    return ms


def parse_date_string_ms(text: str, java_format: str = DEFAULT_JAVA_DATE_FORMAT) -> int:
    """A date string in a Java SimpleDateFormat pattern → epoch ms (no zone means UTC)."""
    from .javadate import parse_java_date_ms
    return parse_java_date_ms(text, java_format)


def parse_duration_ms(value: Any) -> int:
    """``90`` (seconds), ``"10m"``, ``"1h30m"``, ``"500ms"`` → milliseconds."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return int(value * 1000)
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    text = str(value).strip().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return int(float(text) * 1000)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{value!r} is not a duration (e.g. 30s, 10m, 1h30m, 500ms)")
    return int(sum(float(n) * _UNIT_MS[u] for n, u in parts))
