import pytest

from streamslice.planning.subsplit import subsplit
from streamslice.timeutil import (
    java_to_strptime,
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
    assert java_to_strptime("yyyy-MM-dd'T'HH:mm:ss.SSSXXX") == "%Y-%m-%dT%H:%M:%S.%f%z"
    assert parse_date_string_ms("2016-04-04T19:58:46.480-00:00") == 1459799926480
    assert parse_date_string_ms("2016-04-04", "yyyy-MM-dd") == 1459728000000
    with pytest.raises(ValueError, match="does not match the date format"):
        parse_date_string_ms("04/04/2016", "yyyy-MM-dd")
    with pytest.raises(ValueError, match="pattern letter 'Q'"):
        java_to_strptime("yyyy-QQ")


def test_durations():
    assert parse_duration_ms("10m") == 600_000
    assert parse_duration_ms("1h30m") == 5_400_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms(90) == 90_000
    with pytest.raises(ValueError):
        parse_duration_ms("ten minutes")
