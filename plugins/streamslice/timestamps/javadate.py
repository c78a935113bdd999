"""Parsing dates with a Java ``SimpleDateFormat`` pattern, as Flink's Kinesis consumer does for
``flink.stream.initpos.timestamp`` with ``flink.stream.timestamp.date.format``.

Java's rules, not strptime's: letters repeat to set a width (``d`` and ``dd`` both read
``4``; adjacent numeric fields such as ``yyyyMMdd`` read exactly their width), ``S`` is a
number of milliseconds (``.5`` with ``SSS`` is 5 ms, not 500), ``h`` with ``a`` is a 12-hour
clock, ``yy`` puts the year within 80 years before and 20 after now, and text in single quotes
is literal (``''`` is a quote). Zones: ``X`` (ISO 8601: ``Z``, ``+08``, ``+0800``,
``+08:00``), ``Z`` (RFC 822 ``+0800``), ``z`` (``UTC``, ``GMT``, ``GMT+08:00``). No zone
means UTC.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMERIC = set("yMdHhkKmsSDu")
SUPPORTED = NUMERIC | set("aEXZzG")


def parse_java_date_ms(text: str, pattern: str, now: datetime | None = None) -> int:  # noqa: C901 - a dispatch over Java's pattern letters
    """``text`` in ``pattern`` → epoch ms; ValueError naming what did not match."""
    regex, fields = compile_pattern(pattern)
    m = regex.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} does not match the date format {pattern!r}")
    values = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    pm, offset, two_digit_year = None, timedelta(0), False
    for group, (letter, count) in fields.items():
        raw = m.group(group)
        if letter == "M" and count >= 3:
            values["M"] = _name_index(raw, MONTHS) + 1
        elif letter in "EG":
            continue  # day names and eras carry nothing a date does not
        elif letter == "a":
            pm = raw.lower() == "pm"
        elif letter in "XZz":
            offset = _offset(raw)
        elif letter in "hkK":
            hour = int(raw)
            values["H"] = {"h": hour % 12, "k": hour % 24, "K": hour}[letter]
            values["_12"] = letter in "hK"
        else:
            values[letter] = int(raw)
            if letter == "y" and count == 2 and len(raw) == 2:
                two_digit_year = True
    if pm is not None and values.get("_12", False):
        values["H"] = values["H"] % 12 + (12 if pm else 0)
    elif pm and values["H"] < 12:
        values["H"] += 12
    now = now or datetime.now(timezone.utc)
    if two_digit_year:
        values["y"] += (now.year - 80) // 100 * 100
    try:
        dt = datetime(values["y"], values["M"], values["d"], values["H"], values["m"],
                      values["s"], tzinfo=timezone(offset))
        if two_digit_year and dt < now.replace(year=now.year - 80):
            dt = dt.replace(year=dt.year + 100)  # Java: within 80 years before, 20 after now
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid date for {pattern!r}: {exc}") from None
    return int(dt.timestamp() * 1000) + values["S"]


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> tuple[re.Pattern[str], dict[str, tuple[str, int]]]:
    tokens = _tokens(pattern)
    parts, fields = [], {}
    for i, (kind, value) in enumerate(tokens):
        if kind == "literal":
            parts.append(re.escape(value))
            continue
        letter, count = value[0], len(value)
        if letter not in SUPPORTED:
            raise ValueError(f"date format {pattern!r}: pattern letter {letter!r} is not "
                             "supported")
        group = f"f{i}"
        fields[group] = (letter, count)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        adjacent = nxt is not None and nxt[0] == "field" and nxt[1][0] in NUMERIC
        if letter in NUMERIC and not (letter == "M" and count >= 3):
            width = f"{{{count}}}" if adjacent else "+"
            parts.append(f"(?P<{group}>\\d{width})")
        elif letter == "M":
            parts.append(f"(?P<{group}>[A-Za-z]{{3,9}})")
        elif letter == "a":
            parts.append(f"(?P<{group}>[AaPp][Mm])")
        elif letter in "EG":
            parts.append(f"(?P<{group}>[A-Za-z.]+)")
        elif letter == "X":
            parts.append(f"(?P<{group}>Z|[+-]\\d{{2}}(?::?\\d{{2}})?)")
        elif letter == "Z":
            parts.append(f"(?P<{group}>[+-]\\d{{4}})")
        else:  # z
            parts.append(f"(?P<{group}>UTC|GMT(?:[+-]\\d{{1,2}}(?::?\\d{{2}})?)?|Z|"
                         "[+-]\\d{2}:?\\d{2})")
    return re.compile("".join(parts), re.IGNORECASE), fields


def _tokens(pattern: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            if pattern.startswith("''", i):
                out.append(("literal", "'"))
                i += 2
                continue
            text, j = [], i + 1
            while True:  # inside quotes, '' is a quote
                if j >= len(pattern):
                    raise ValueError(f"unclosed quote in date format {pattern!r}")
                if pattern[j] == "'":
                    if pattern.startswith("''", j):
                        text.append("'")
                        j += 2
                        continue
                    break
                text.append(pattern[j])
                j += 1
            out.append(("literal", "".join(text)))
            i = j + 1
        elif ch.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            out.append(("field", pattern[i:j]))
            i = j
        else:
            out.append(("literal", ch))
            i += 1
    return out


def _name_index(raw: str, names: list[str]) -> int:
    low = raw.lower()
    for i, name in enumerate(names):
        if name == low or (len(low) == 3 and name.startswith(low)):
            return i
    raise ValueError(f"{raw!r} is not a month name")


def _offset(raw: str) -> timedelta:
    text = raw.upper().removeprefix("GMT").removeprefix("UTC")
    if text in ("", "Z"):
        return timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = (int(digits[:-2]), int(digits[-2:])) if len(digits) > 2 else \
        (int(digits), 0)
    return sign * timedelta(hours=hours, minutes=minutes)
