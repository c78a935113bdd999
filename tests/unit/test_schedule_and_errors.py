"""Interval arithmetic (as Airflow's data-interval timetables lay intervals out) and error
kinds that survive a process boundary."""
from datetime import datetime, timezone

import pytest

from streamslice import errors
from streamslice.config.schedule import interval_containing, interval_width_ms, intervals_between
from streamslice.planning.bounds import IntervalBounds
from streamslice.planning.plan import Interval
from tests.support.pipelines import parsed

H, D = 3_600_000, 86_400_000
MAY1 = 1_714_521_600_000  # 2024-05-01T00:00:00Z


def Cfg(schedule, start_date=MAY1, lateness=0):  # noqa: N802 (reads as the config it makes)
    """An interval pipeline's configuration, as its file gives it (times in ms)."""
    start = datetime.fromtimestamp(start_date / 1000, timezone.utc).isoformat()
    return parsed("kafka", {"bootstrap_servers": "b:9092", "topics": ["t"]}, mode="interval",
                  schedule=schedule, start_date=start, allowed_lateness=f"{lateness}ms",
                  output="/lake")


@pytest.mark.parametrize("schedule, at, start, end", [
    ("@hourly", MAY1 + 90 * 60_000, MAY1 + H, MAY1 + 2 * H),
    ("@hourly", MAY1 + H, MAY1 + H, MAY1 + 2 * H),  # a boundary starts its interval
    ("0 */6 * * *", MAY1 + 7 * H, MAY1 + 6 * H, MAY1 + 12 * H),
    ("@daily", MAY1 + 5, MAY1, MAY1 + D),
    ("15m", MAY1 + 16 * 60_000, MAY1 + 15 * 60_000, MAY1 + 30 * 60_000),
])
def test_interval_containing(schedule, at, start, end):
    iv = interval_containing(Cfg(schedule), at)
    assert (iv.start, iv.end) == (start, end)


def test_duration_schedules_count_from_the_start_date():
    iv = interval_containing(Cfg("10m", start_date=MAY1 + 3 * 60_000), MAY1 + 14 * 60_000)
    assert (iv.start, iv.end) == (MAY1 + 13 * 60_000, MAY1 + 23 * 60_000)


def test_monthly_widths_follow_the_calendar():
    assert interval_width_ms("@monthly", MAY1) == 31 * D
    assert interval_width_ms("@monthly", MAY1 + 31 * D) == 30 * D  # June


def test_intervals_between_covers_every_overlapping_interval():
    ivs = intervals_between(Cfg("@hourly", lateness=60_000), MAY1 + 30 * 60_000, MAY1 + 3 * H)
    assert [(i.start - MAY1) // H for i in ivs] == [0, 1, 2]
    assert all(i.allowed_lateness == 60_000 for i in ivs)
    with pytest.raises(ValueError, match="empty or reversed"):
        intervals_between(Cfg("@hourly"), MAY1, MAY1)


def test_interval_bounds():
    b = IntervalBounds(Interval(1_000, 2_000, allowed_lateness=300))
    assert (b.start, b.end, b.read_until, b.late_from, b.owned_until) == \
        (1_000, 2_000, 2_300, 1_300, 2_000)
    assert b.time("data_interval_start") == 1_000 and b.time("data_interval_end") == 2_000


@pytest.mark.parametrize("exc", [
    errors.DataLossError("records expired", split=3), errors.SourceError("t:0: down"),
    errors.DecodeError("bad json", split=0), errors.CommitError("verify"),
    errors.ConfigError("bad option"), errors.InjectedFault("boom", split=1),
])
def test_error_kinds_cross_a_process_boundary_as_one_line(exc):
    text = f"py4j.Py4JJavaError: An error occurred\nTraceback...\nRuntimeError: {exc.to_line()}\n"
    back = errors.from_text(text)
    assert back is not None and type(back) is type(exc) and back.split == exc.split
    assert str(back) == str(exc) and errors.from_text("no marker here") is None


def test_a_dead_spark_jvm_is_named_and_retried():
    from streamslice.spark.job import unwrap
    err = unwrap(ConnectionRefusedError("[Errno 111] Connection refused"))
    assert isinstance(err, errors.SourceError) and err.transient
    assert str(err).startswith("the Spark JVM is gone (killed, or out of memory?)")


def test_a_missing_topic_shows_close_matches_not_every_topic():
    from streamslice.kafka.admin import topic_hint
    topics = [f"t{i}" for i in range(50)] + ["orders"]
    assert topic_hint("order", topics) == " (did you mean orders?)"
    assert topic_hint("zzzzzz", topics).endswith("and 41 more)")
    assert topic_hint("x", []) == " (it has no topics)"
