"""The coverage strip's expected intervals equal Airflow's own timetable iteration for every
kind of schedule the DAG factory builds (the page steps them itself, for speed)."""
from datetime import datetime, timezone

import pytest

from streamslice.airflow.factory import build_dag
from streamslice.airflow.ui_data import intervals_of
from streamslice.config import parse_pipeline
from streamslice.timestamps import from_ms, to_ms

SINCE = to_ms(datetime(2024, 5, 1, 3, 7, tzinfo=timezone.utc))


def serialized(schedule, extra=""):
    from airflow.serialization.serialized_objects import DagSerialization
    cfg = parse_pipeline(f"""
mode: interval
schedule: "{schedule}"
start_date: 2024-04-28T00:00:00Z
{extra}
kafka: {{bootstrap_servers: "b:9092", topics: [t]}}
output: {{path: /lake}}
""", file="p.yaml", default_name="orders")
    return DagSerialization.from_dict(DagSerialization.to_dict(build_dag(cfg)))


def airflows_own(dag, since, until):
    out = []
    for info in dag.iter_dagrun_infos_between(from_ms(since), from_ms(until - 1)):
        start, end = to_ms(info.data_interval.start), to_ms(info.data_interval.end)
        if start >= until:
            break
        out.append((start, end))
    return out


@pytest.mark.parametrize("schedule", ["@hourly", "@daily", "*/15 * * * *", "0 9 * * 1-5",
                                      "15m", "90s", "2h"])
def test_same_intervals_as_airflow(schedule):
    dag = serialized(schedule)
    until = SINCE + 9 * 86_400_000
    ours = intervals_of(dag, SINCE, until)
    assert ours and ours == airflows_own(dag, SINCE, until)[:len(ours)]
    assert len(ours) == min(1000, len(airflows_own(dag, SINCE, until)))


def test_none_before_the_start_date_nor_after_the_end_date():
    dag = serialized("@daily", 'end_date: "2024-05-03T00:00:00Z"')
    ours = intervals_of(dag, to_ms(datetime(2024, 4, 1, tzinfo=timezone.utc)),
                        to_ms(datetime(2024, 6, 1, tzinfo=timezone.utc)))
    day = 86_400_000
    first = to_ms(datetime(2024, 4, 28, tzinfo=timezone.utc))
    # Airflow schedules no run whose logical date (the interval start) is after end_date.
    assert ours == [(first + i * day, first + (i + 1) * day) for i in range(6)]


def test_a_cron_schedule_in_another_time_zone_is_left_to_airflow():
    """Across a DST change a local-time cron is not a UTC cron: such DAGs (not built by the
    factory, which schedules in UTC) take Airflow's own iteration."""
    import pendulum
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables.interval import CronDataIntervalTimetable
    paris = pendulum.timezone("Europe/Paris")
    dag = DAG("paris", schedule=CronDataIntervalTimetable("0 9 * * *", timezone=paris),
              start_date=datetime(2024, 3, 20, tzinfo=timezone.utc))
    stored = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    since = to_ms(datetime(2024, 3, 25, tzinfo=timezone.utc))
    until = since + 14 * 86_400_000  # Paris moves to summer time on 31 March
    ours = intervals_of(stored, since, until)
    assert ours == airflows_own(stored, since, until)
    assert {(e - s) // 3_600_000 for s, e in ours} == {23, 24}


def test_the_page_shows_times_in_the_time_zone_of_the_dags_timetable():
    import pendulum
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables.interval import CronDataIntervalTimetable

    from streamslice.airflow.ui_data import time_zone
    assert time_zone(serialized("@hourly")) == "UTC"  # the factory schedules in UTC
    dag = DAG("paris", schedule=CronDataIntervalTimetable(
        "0 9 * * *", timezone=pendulum.timezone("Europe/Paris")),
        start_date=datetime(2024, 3, 20, tzinfo=timezone.utc))
    assert time_zone(DagSerialization.from_dict(DagSerialization.to_dict(dag))) == "Europe/Paris"
    manual = DagSerialization.from_dict(DagSerialization.to_dict(DAG("m", schedule=None)))
    assert time_zone(manual) == "UTC" and time_zone(None) == "UTC"


def test_the_strip_shows_the_latest_48_intervals_up_to_now_by_default():
    """*default: the latest 48 intervals up to now*, as wide as the newest run's (an hour
    before any run): a pipeline that stopped running shows what it missed since."""
    from sqlalchemy.orm import Session

    from streamslice.airflow.ui_data import default_range
    from streamslice.ui.model import Run
    session = Session()  # not bound to a database: the range needs none
    end = datetime(2024, 5, 3, tzinfo=timezone.utc)
    quarter = Run("r", "success", start=to_ms(end) - 900_000, end=to_ms(end))
    now = to_ms(end) + 7 * 86_400_000
    assert default_range(session, "orders", quarter, now_ms=now) == (now - 48 * 900_000, now)
    assert default_range(session, "orders", None, now_ms=now) == (now - 48 * 3_600_000, now)
