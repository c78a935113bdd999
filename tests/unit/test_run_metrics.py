"""The figures each run sends to monitoring (``streamslice.monitoring.metrics``), from plain
manifests; that Airflow's StatsD and OpenTelemetry backends receive them is tests/integration/
test_metrics.py. The names are the documentation's (docs/operations.md, Metrics)."""
import re
from pathlib import Path

import pytest

from streamslice.monitoring.metrics import NAMES, Figure, data_age_ms, run_figures, step_timing
from tests.support.records import manifest as a_manifest

ROOT = Path(__file__).resolve().parents[2]
H = 3_600_000
T0 = 1_714_521_600_000


def manifest(records=5, dead=1, late=2, splits=(), interval=None, max_ts=None):
    return a_manifest(records=records, dead_letters=dead, late_records=late, splits=splits,
                      interval=interval, max_timestamp=max_ts)


def by_name(figures):
    return {f.name: (f.kind, f.value) for f in figures}


def test_a_kafka_run_counts_its_records_and_sums_lag_over_partitions():
    splits = [{"key": "t:0", "lag": 3, "lag_unit": "records"},
              {"key": "t:1", "lag": 4, "lag_unit": "records"}]
    got = by_name(run_figures(manifest(splits=splits, max_ts=T0), now_ms=T0 + 90_000))
    assert got == {"records": ("count", 5), "dead_letters": ("count", 1),
                   "late_records": ("count", 2), "lag_records": ("gauge", 7),
                   "data_age": ("gauge", 90.0)}


def test_a_kinesis_run_reports_the_worst_shards_time_behind_not_a_sum():
    splits = [{"key": "s:0", "lag": 900, "lag_unit": "ms"},
              {"key": "s:1", "lag": 40, "lag_unit": "ms"}]
    got = by_name(run_figures(manifest(splits=splits), now_ms=T0))
    assert got["lag_ms"] == ("gauge", 900) and "lag_records" not in got
    assert "data_age" not in got  # a batch that read nothing has no newest record


def test_data_age_of_an_interval_is_from_its_end_even_when_it_was_empty():
    interval = {"start": T0, "end": T0 + H, "allowed_lateness": 0}
    empty = manifest(records=0, interval=interval, max_ts=None)
    assert data_age_ms(empty, T0 + H + 5_000) == 5_000
    # A backfill of an old interval: the newest interval the checkpoint holds counts.
    assert data_age_ms(empty, T0 + 10 * H, newest_end=T0 + 9 * H) == H
    assert data_age_ms(empty, T0, newest_end=None) == 0  # never negative


def test_step_timings_are_milliseconds_named_by_step():
    assert step_timing("read", 1.25) == Figure("read.duration", "timing", 1250.0)
    assert Figure("records", "count", 1).stat == "streamslice.records"
    assert Figure("records", "count", 1).stat_for("a.b") == "streamslice.records.a__b"
    with pytest.raises(ValueError, match="'publish' is not one of"):
        step_timing("publish", 1)


def test_every_figure_is_documented_with_its_kind_and_unit():
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `airflow\.streamslice\.([a-z_.]+)` \| (\w+) ", section, re.M))
    assert rows == {name: kind for name, (kind, _, _) in NAMES.items()}
