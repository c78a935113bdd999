"""``output.partition_path``: an interval's folder made of its start time (Hive-style, for
engines to prune on), checked so that every interval has a folder of its own; the partition's
identity (checkpoint, manifest, dead letters) stays ``interval=…``, and without the setting
nothing changes."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamslice.commit.manifest import read_manifest
from streamslice.commit.protocol import publish_once
from streamslice.errors import ConfigError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.layout import PartitionPath
from streamslice.planning.plan import Interval, OutputTarget, ReadPlan
from streamslice.planning.planner import check_columns
from streamslice.reading.staging import Staging
from streamslice.reading.stats import SplitSummary
from streamslice.sources import read_plan
from tests.support.checks import present
from tests.unit.test_config import error, parse

HOURLY = """\
mode: interval
schedule: '@hourly'
start_date: '2024-05-01T00:00:00Z'
kafka:
  bootstrap_servers: 127.0.0.1:9092
  topics: [orders]
output:
  path: /lake
  partition_path: 'dt=%Y-%m-%d/hour=%H'
"""
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def test_an_hourly_hive_path_renders_the_interval_start_in_utc():
    cfg = parse(HOURLY)
    assert cfg.output.settings.partition_path == "dt=%Y-%m-%d/hour=%H"
    target = cfg.output.target("p")
    assert target.partition_path == "dt=%Y-%m-%d/hour=%H"
    assert target.folder("interval=20240501T230000Z", Interval(T0 + 23 * HOUR, T0 + 24 * HOUR)) \
        == "dt=2024-05-01/hour=23"
    path = PartitionPath("dt=%Y-%m-%d/hour=%H")
    assert path.columns(T0 + 5 * HOUR) == {"dt": "2024-05-01", "hour": "05"}
    assert path.keys == ["dt", "hour"]


def test_without_the_setting_the_folder_is_the_partition_name():
    cfg = parse(HOURLY.replace("  partition_path: 'dt=%Y-%m-%d/hour=%H'\n", ""))
    target = cfg.output.target("p")
    assert cfg.output.settings.partition_path is None and target.partition_path is None
    assert target.folder("interval=20240501T000000Z", Interval(T0, T0 + HOUR)) \
        == "interval=20240501T000000Z"


@pytest.mark.parametrize("schedule, template", [
    ("'@daily'", "dt=%Y-%m-%d"),
    ("'@daily'", "year=%Y/day=%j"),
    ("'@hourly'", "%F/%H"),
    ("'15m'", "dt=%Y-%m-%d/hour=%H/minute=%M"),
    ("'0 */6 * * *'", "date=%Y%m%d/hour=%H"),
    ("'@monthly'", "year=%Y/month=%m"),
    ("'90m'", "dt=%Y-%m-%d/hour=%H"),  # one start per hour at most
    ("'10s'", "ts=%Y%m%dT%H%M%S"),
])
def test_templates_that_give_each_interval_its_own_folder(schedule, template):
    text = HOURLY.replace("'@hourly'", schedule).replace("dt=%Y-%m-%d/hour=%H", template)
    assert parse(text).output.settings.partition_path == template


@pytest.mark.parametrize("template, schedule, message", [
    ("dt=%Y-%m-%d", "'@hourly'", "names intervals to the day, but the schedule's intervals "
                                 "are 3600s long: two intervals would share a folder (add the "
                                 "hour)"),
    ("dt=%Y-%m-%d/hour=%H", "'15m'", "(add the minute)"),
    ("hour=%H", "'@hourly'", "does not name the year, month, day of an interval"),
    ("y=%Y/d=%d/h=%H", "'@hourly'", "does not name the month of an interval"),
    ("plain", "'@hourly'", "does not name the year of an interval"),
    ("dt=%Y-%m-%d/wd=%a", "'@daily'", "%a is not allowed"),
    ("/dt=%Y-%m-%d", "'@daily'", "must be a relative folder path"),
    ("dt=%Y-%m-%d/", "'@daily'", "must be a relative folder path"),
    ("dt=%Y-%m-%d/../x", "'@daily'", "folder '..' may hold only"),
    ("dt=%Y-%m-%d/t=%H:%M", "'@hourly'", "folder 't=%H:%M' may hold only"),
    ("%Y=%m/%d", "'@daily'", "needs a fixed name before '='"),
    ("d=%Y/d=%m-%d", "'@daily'", "names a column twice"),
    ("pipeline=%Y-%m-%d", "'@daily'", "'pipeline' is the dataset's own folder column"),
    # 28-day intervals: two may start in one 31-day month
    ("y=%Y/m=%m", "'28d'", "gives the intervals starting 2024-05-01T00:00:00.000Z and "
                           "2024-05-29T00:00:00.000Z the same folder 'y=2024/m=05'"),
])
def test_templates_that_would_make_intervals_share_a_folder_are_refused(template, schedule,
                                                                         message):
    text = HOURLY.replace("'@hourly'", schedule).replace("dt=%Y-%m-%d/hour=%H", template)
    got = error(text)
    assert got.startswith("p.yaml:9: output.partition_path: ")
    assert message in got


def test_a_partition_path_needs_interval_mode():
    text = ("mode: incremental\nkafka:\n  bootstrap_servers: 127.0.0.1:9092\n  topics: [o]\n"
            "output:\n  path: /lake\n  partition_path: 'dt=%Y-%m-%d'\n")
    assert "output.partition_path: only applies to mode interval" in error(text)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_partition_path_is_for_folder_outputs(fmt):
    text = HOURLY.replace("  path: /lake\n", f"  path: /lake\n  format: {fmt}\n")
    assert f"output.partition_path: is for folder outputs (parquet, json, orc); a {fmt} " \
        "table is partitioned by the table itself" in error(text)


def test_a_folder_column_named_like_a_record_column_is_refused():
    plan = make_plan("/d", "dt=%Y-%m-%d/partition=%H")  # Kafka's own column 'partition'
    with pytest.raises(ConfigError, match="the folder column 'partition' has the name of the "
                                          "records' column 'partition'"):
        check_columns(plan)
    check_columns(make_plan("/d", "dt=%Y-%m-%d/hour=%H"))


def test_a_version_4_plan_publishes_where_it_did():
    data = json.loads(make_plan("/d", None).to_json())
    data["version"] = 4
    del data["output"]["partition_path"]
    plan = read_plan(data)
    output = present(plan.output)
    assert output.partition_path is None
    assert output.folder(plan.partition, plan.interval) == "interval=20240501T010000Z"


def make_plan(dataset, template, start=T0 + HOUR):
    return ReadPlan(pipeline="p", source="kafka", mode="interval", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 2)], partition="interval=20240501T010000Z",
                    interval=Interval(start, start + HOUR),
                    output=OutputTarget(dataset, partition_path=template))


def stage(tmp_path, plan, name="staging"):
    st = Staging(str(tmp_path / name))
    (tmp_path / name / "data").mkdir(parents=True)
    pq.write_table(pa.table({"topic": ["t", "t"], "partition": pa.array([0, 0], pa.int32()),
                             "offset": [0, 1]}),
                   tmp_path / name / "data" / "part-0.parquet")
    st.write_summary(0, SplitSummary(0, "t:0", 0, 2, records=2, reached_stop=True))
    return st


def test_publish_lands_in_the_templated_folder_and_a_retry_or_rerun_finds_it(tmp_path):
    ds = tmp_path / "ds"
    plan = make_plan(str(ds), "dt=%Y-%m-%d/hour=%H")
    manifest = publish_once(plan, stage(tmp_path, plan), run_id="r1", now_ms=1)
    folder = ds / "dt=2024-05-01" / "hour=01"
    assert manifest.published == {"uri": str(folder)}
    assert manifest.partition == "interval=20240501T010000Z"  # its identity is unchanged
    assert sorted(p.name for p in folder.iterdir()) == ["_manifest.json", "part-0.parquet"]
    assert not (ds / "interval=20240501T010000Z").exists()
    assert present(read_manifest(str(ds), "dt=2024-05-01/hour=01"))["plan_id"] == manifest.plan_id
    # a retried commit (its staging area gone) recognises its publish in the templated folder
    retried = publish_once(plan, Staging(str(tmp_path / "staging")), run_id="r1", now_ms=2)
    assert retried.plan_id == manifest.plan_id
    assert retried.published == {"uri": str(folder)}
    # a re-run of the interval (a new plan) replaces the folder: one file, not two
    again = make_plan(str(ds), "dt=%Y-%m-%d/hour=%H")
    again.planned_at = 5
    publish_once(again, stage(tmp_path, again, "s2"), run_id="r2", now_ms=3)
    assert sorted(p.name for p in folder.iterdir()) == ["_manifest.json", "part-0.parquet"]
    assert present(read_manifest(str(ds), "dt=2024-05-01/hour=01"))["run_id"] == "r2"


def test_without_a_template_publish_is_as_before(tmp_path):
    ds = tmp_path / "ds"
    plan = make_plan(str(ds), None)
    manifest = publish_once(plan, stage(tmp_path, plan), run_id="r1", now_ms=1)
    assert manifest.published == {"uri": str(ds / "interval=20240501T010000Z")}
    assert [p.name for p in ds.iterdir()] == ["interval=20240501T010000Z"]



def test_the_trash_of_a_templated_folder_in_place_again_is_removed(tmp_path, monkeypatch):
    """A publish killed after its rename leaves what it replaced in the trash; the next
    publish of any partition removes it once the partition is in place, found by its
    templated folder's manifest (not a folder named like the partition)."""
    from streamslice.errors import InjectedFault
    ds = tmp_path / "ds"
    plan = make_plan(str(ds), "dt=%Y-%m-%d/hour=%H")
    publish_once(plan, stage(tmp_path, plan), run_id="r1", now_ms=1)
    again = make_plan(str(ds), "dt=%Y-%m-%d/hour=%H")
    again.planned_at = 5
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "publish_renamed")
    with pytest.raises(InjectedFault):  # the new folder in place, the old one in the trash
        publish_once(again, stage(tmp_path, again, "s2"), run_id="r2", now_ms=2)
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    trash = tmp_path / "_streamslice" / "ds" / "trash"
    assert len(list(trash.iterdir())) == 1
    later = make_plan(str(ds), "dt=%Y-%m-%d/hour=%H", start=T0 + 2 * HOUR)
    later.partition = "interval=20240501T020000Z"
    publish_once(later, stage(tmp_path, later, "s3"), run_id="r3", now_ms=3)
    assert list(trash.iterdir()) == []
    assert sorted(p.name for p in (ds / "dt=2024-05-01").iterdir()) == ["hour=01", "hour=02"]
