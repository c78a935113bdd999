import pytest

from streamslice.planning.subsplit import subsplit
from streamslice.timestamps import (
    parse_date_string_ms,
    parse_duration_ms,
    parse_epoch_seconds_ms,
    parse_flexible_ms,
    parse_timestamp_ms,
)


@pytest.mark.parametrize("start, stop, most", [(0, 10, 3), (5, 1005, 100), (0, 7, 7),
                                               (3, 3, 5), (0, 1_000_001, 250_000)])
def test_subsplit_covers_range_in_near_equal_parts(start, stop, most):
    parts = subsplit(start, stop, most)
    assert parts[0][0] == start and parts[-1][1] == stop
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    sizes = [hi - lo for lo, hi in parts]
    assert max(sizes) <= max(most, 0) or stop == start
    assert max(sizes) - min(sizes) <= 1
    assert len(parts) == max(1, -(-(stop - start) // most))


def test_timestamps():
    assert parse_timestamp_ms(1714521600000) == 1714521600000
    assert parse_timestamp_ms("2024-05-01T00:00:00Z") == 1714521600000
    assert parse_timestamp_ms("2024-05-01T02:00:00+02:00") == 1714521600000
    assert parse_epoch_seconds_ms("1459799926.480") == 1459799926480
    assert parse_flexible_ms("1714521600") == 1714521600000
    assert parse_flexible_ms("1714521600000") == 1714521600000
    assert parse_flexible_ms("2024-05-01") == 1714521600000
    with pytest.raises(ValueError, match="out of range"):
        parse_timestamp_ms(10**15)


def test_java_date_formats():
    assert parse_date_string_ms("2016-04-04T19:58:46.480-00:00") == 1459799926480
    assert parse_date_string_ms("2016-04-04", "yyyy-MM-dd") == 1459728000000
    with pytest.raises(ValueError, match="does not match the date format"):
        parse_date_string_ms("04/04/2016", "yyyy-MM-dd")
    with pytest.raises(ValueError, match="pattern letter 'Q'"):
        parse_date_string_ms("2016-01", "yyyy-QQ")


@pytest.mark.parametrize("text, pattern, expected", [
    # single letters take any width, as SimpleDateFormat parses them
    ("4/4/2016", "d/M/yyyy", "2016-04-04T00:00:00.000"),
    ("14/12/2016", "d/M/yyyy", "2016-12-14T00:00:00.000"),
    # a 12-hour clock with its AM/PM marker
    ("2016-04-04 07:58:46 PM", "yyyy-MM-dd hh:mm:ss a", "2016-04-04T19:58:46.000"),
    ("2016-04-04 12:05:00 AM", "yyyy-MM-dd hh:mm:ss a", "2016-04-04T00:05:00.000"),
    # S counts milliseconds: ".5" is 5 ms, not half a second
    ("2016-04-04T19:58:46.5Z", "yyyy-MM-dd'T'HH:mm:ss.SSSX", "2016-04-04T19:58:46.005"),
    ("2016-04-04T19:58:46.480+02:00", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
     "2016-04-04T17:58:46.480"),
    # adjacent numeric fields read exactly their width
    ("20160404195846", "yyyyMMddHHmmss", "2016-04-04T19:58:46.000"),
    ("04 Apr 2016 19:58 +0100", "dd MMM yyyy HH:mm Z", "2016-04-04T18:58:00.000"),
    ("Mon, 4 April 2016 19:58 GMT", "EEE, d MMMM yyyy HH:mm z", "2016-04-04T19:58:00.000"),
    ("it's 2016", "'it''s' yyyy", "2016-01-01T00:00:00.000"),
])
def test_java_simple_date_format_semantics(text, pattern, expected):
    from streamslice.timestamps import iso
    assert iso(parse_date_string_ms(text, pattern)) == expected + "Z"


def test_two_digit_years_fall_within_80_years_before_and_20_after_now():
    from datetime import datetime, timezone

    from streamslice.timestamps.javadate import parse_java_date_ms
    now = datetime(2026, 11, 23, tzinfo=timezone.utc)
    assert parse_java_date_ms("01/01/46", "dd/MM/yy", now) // 1000 == 2398377600  # 2046
    assert parse_java_date_ms("01/01/47", "dd/MM/yy", now) // 1000 == -725846400  # 1947


def test_durations():
    assert parse_duration_ms("10m") == 600_000
    assert parse_duration_ms("1h30m") == 5_400_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms(90) == 90_000
    with pytest.raises(ValueError):
        parse_duration_ms("ten minutes")
