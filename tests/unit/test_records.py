"""Saved records and releases (streamslice.records): what a release before records were
versioned wrote is read as version 1 (the files under ``saved/`` are real ones, copied from
runs of that code: asset state, manifests, summaries, asset events); a record of this version
round-trips exactly; an older one is migrated; a newer one is refused with what to do; a wrong
field is named, never dropped."""
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from streamslice.airflow.ui_data import _sent
from streamslice.commit.checkpoint import Checkpoint
from streamslice.commit.manifest import Manifest, manifest_bytes
from streamslice.errors import RecordError, RecordVersionError, from_text
from streamslice.monitoring.alerts import Alert, SentAlert
from streamslice.monitoring.metrics import RunMetrics
from streamslice.reading.event_time import EventTime
from streamslice.reading.stats import SplitSummary
from streamslice.records import RecordKind, Versioned, upgrade
from streamslice.ui.model import Run
from tests.support.checks import present

SAVED = Path(__file__).parent / "saved"


def saved(name):
    return json.loads((SAVED / name).read_text())


def test_checkpoints_written_before_versions_are_read_by_attribute():
    kafka = Checkpoint.from_dict(saved("checkpoint-kafka-interval.json"))
    assert (kafka.positions, kafka.batch, kafka.interval_end, kafka.partition) == (
        {"ui-8c1250e9:0": 3}, 0, 1714525200000, "interval=20240501T000000Z")
    assert kafka.run_id == "manual__2026-11-26T09:11:15.888108+00:00"
    assert kafka.version == 1
    kinesis = Checkpoint.from_dict(saved("checkpoint-kinesis-incremental.json"))
    assert kinesis.source_state == {"initial_position": {"type": "TRIM_HORIZON"}}
    assert (kinesis.positions, kinesis.batch, kinesis.interval_end) == ({}, 1, None)
    shards = Checkpoint.from_dict(saved("checkpoint-kinesis-interval.json")).positions
    assert shards["evtime-1b9c6370:shardId-000000000001"] == {
        "after": "49680579225193634247984384285936701229089906059563237394"}


@pytest.mark.parametrize("name", ["checkpoint-kafka-interval.json",
                                  "checkpoint-kinesis-incremental.json",
                                  "checkpoint-kinesis-interval.json"])
def test_a_checkpoint_is_written_as_before_plus_its_version(name):
    old = saved(name)
    written = Checkpoint.from_dict(old).to_dict()
    assert written == {**old, "version": 1}
    assert Checkpoint.from_dict(json.loads(json.dumps(written))) == Checkpoint.from_dict(old)


def test_a_checkpoint_from_a_newer_release_is_refused_with_what_to_do():
    with pytest.raises(RecordVersionError) as caught:
        Checkpoint.from_dict({**saved("checkpoint-kafka-interval.json"), "version": 2})
    message = str(caught.value)
    assert "checkpoint version 2 was written by a newer streamslice" in message
    assert "this one reads checkpoint versions 1" in message
    assert "upgrade streamslice here" in message
    assert caught.value.kind == "record_version" and not caught.value.transient
    assert isinstance(from_text(caught.value.to_line()), RecordVersionError)


def test_a_wrong_checkpoint_field_is_named_never_dropped():
    with pytest.raises(RecordError, match="unknown field 'offsets' for checkpoint version 1"):
        Checkpoint.from_dict({"offsets": {"t:0": 3}})
    with pytest.raises(RecordError, match=r"Expected `int`, got `str` - at `\$.batch`"):
        Checkpoint.from_dict({"batch": "3"})
    with pytest.raises(RecordError, match="must be a JSON object, got list"):
        Checkpoint.from_dict([1])
    with pytest.raises(RecordError, match=r"no valid version \('1'\)"):
        Checkpoint.from_dict({"version": "1"})
    assert Checkpoint.saved(None) is None and Checkpoint.saved({}) is None


@dataclass
class Renamed(Versioned):
    """A record whose version 2 renamed ``n`` to ``count`` and version 3 added ``unit``."""

    KIND: ClassVar[RecordKind] = RecordKind("thing", 3, {
        1: lambda d: {"count": d.pop("n"), **d},
        2: lambda d: {**d, "unit": "records"}})
    count: int
    unit: str
    version: int = 3


def test_an_older_record_is_migrated_step_by_step():
    assert Renamed.from_dict({"n": 4}) == Renamed(4, "records")  # no version: version 1
    assert Renamed.from_dict({"count": 4, "version": 2}) == Renamed(4, "records")
    assert Renamed.from_dict({"count": 4, "unit": "ms", "version": 3}) == Renamed(4, "ms")
    assert upgrade({"n": 1}, Renamed.KIND) == {"count": 1, "unit": "records", "version": 3}
    with pytest.raises(RecordVersionError, match="reads thing versions 1 to 3"):
        Renamed.from_dict({"count": 4, "unit": "ms", "version": 4})
    partial = RecordKind("thing", 3, {2: Renamed.KIND.migrations[2]})
    with pytest.raises(RecordVersionError, match="version 1 is too old .* versions 2 to 3"):
        upgrade({"n": 1}, partial)


def test_sent_alerts_written_before_versions_are_read_by_attribute():
    old = saved("sent-alerts.json")
    sent = {a.kind: a for a in map(SentAlert.from_dict, old)}
    assert sorted(sent) == ["data_loss", "dead_letters", "empty_intervals", "lag", "run_failed",
                            "stale"]
    failed = sent["run_failed"]
    assert (failed.task, failed.error_kind) == ("plan", "plan")
    assert failed.message.startswith("task plan failed: PlanError: Kinesis stream")
    assert sent["stale"].run_id is None and sent["lag"].at == 1795685072203
    assert [a.to_dict() for a in map(SentAlert.from_dict, old)] == [
        {**a, "version": 1} for a in old]


def test_a_sent_alert_keeps_what_the_page_explains_a_failure_by():
    alert = Alert(kind="run_failed", pipeline="p", message="task read failed: boom",
                  run_id="r", details={"task": "read", "error_kind": "source", "error": "x"})
    assert SentAlert.of(alert, 5) == SentAlert(5, "run_failed", "task read failed: boom", "r",
                                               "read", "source")


def test_an_alert_is_published_as_json_with_its_version():
    """docs/operations.md: published as JSON with a ``version`` (1 today)."""
    alert = Alert(kind="lag", pipeline="p", message="m", run_id="r",
                  interval={"start": "2024-05-01T00:00:00.000Z",
                            "end": "2024-05-01T01:00:00.000Z"}, details={"lag_records": 9})
    published = json.loads(alert.to_json())
    assert published["version"] == 1 and published["details"] == {"lag_records": 9}
    assert Alert.from_dict(published) == alert
    with pytest.raises(RecordVersionError, match="alert version 2 was written by a newer"):
        Alert.from_dict({**published, "version": 2})


def test_the_page_leaves_out_a_sent_alert_it_cannot_read_and_says_so(caplog):
    newer = json.dumps({**saved("sent-alerts.json")[0], "version": 2})
    with caplog.at_level("WARNING", logger="streamslice"):
        assert _sent(newer) is None
    assert "sent alert version 2 was written by a newer streamslice" in caplog.text
    assert present(_sent(json.dumps(saved("sent-alerts.json")[0]))).kind == "data_loss"


MANIFESTS = ["manifest-files-incremental.json", "manifest-kafka-incremental.json",
             "manifest-kafka-interval-event-time.json", "manifest-kinesis-incremental.json",
             "manifest-kinesis-interval-event-time.json"]


@pytest.mark.parametrize("name", MANIFESTS)
def test_a_manifest_is_written_as_before_plus_its_versions(name):
    """Each ``_manifest.json`` (and each split summary in it) keeps every key it had, with the
    values it had, and gains only ``version``: what readers of manifests see is unchanged."""
    old = saved(name)
    manifest = Manifest.from_dict(old)
    written = manifest.to_dict()
    assert written == {**old, "version": 1,
                       "splits": [{**s, "version": 1} for s in old["splits"]]}
    assert Manifest.from_dict(json.loads(manifest_bytes(manifest))) == manifest


def test_manifests_written_before_versions_are_read_by_attribute():
    kinesis = Manifest.from_dict(saved("manifest-kinesis-interval-event-time.json"))
    assert (kinesis.records, kinesis.dead_letters, kinesis.late_records,
            kinesis.early_records) == (109, 10, 22, 12)
    interval = present(kinesis.interval)
    assert interval.event_time == EventTime("event_time")  # a record, read back
    assert (interval.end, interval.allowed_earliness) == (1795685292000, 1000)
    shard = kinesis.splits[0]
    assert (shard.key, shard.records, shard.early, shard.lag, shard.lag_unit) == (
        "evtime-1b9c6370:shardId-000000000000", 61, 5, 0, "ms")
    assert shard.start == {"timestamp": 1795685287000, "type": "AT_TIMESTAMP"}
    # the source's own figures, which its checkpoint is made from
    assert shard.extra["last_seq"] == shard.last and shard.extra["reader"] == "polling"
    assert present(kinesis.plan)["version"] == 7 and kinesis.published is None
    files = Manifest.from_dict(saved("manifest-files-incremental.json"))
    assert (files.batch, files.interval, files.early_records) == (1, None, None)
    assert files.splits[0].extra == {} and files.splits[0].early is None


def test_what_a_run_reports_is_computed_from_a_saved_manifest():
    """Alerts, run figures and the asset event's extra read the manifest by attribute."""
    from streamslice.airflow.tasks import run_metrics
    from streamslice.monitoring.alerts import AlertRules, evaluate
    from streamslice.monitoring.metrics import run_figures
    manifest = Manifest.from_dict(saved("manifest-kinesis-interval-event-time.json"))
    extra = run_metrics(manifest, {"s:0": {"after": "1"}})
    assert (extra.records, extra.early_records, extra.lag_unit, extra.splits) == (
        109, 12, "ms", 2)
    assert extra.dead_letter_uri == manifest.dead_letter_uri
    assert {f.name: f.value for f in run_figures(manifest, present(manifest.interval).end)}[
        "late_records"] == 22
    (kind, message, _), = evaluate(AlertRules(dead_letters=5), manifest)
    assert kind == "dead_letters" and message.startswith("10 records failed to decode")


def test_a_summary_written_before_lag_unit_reads_its_lag_in_ms():
    old = {**saved("manifest-kinesis-incremental.json")["splits"][0], "lag": None}
    del old["lag_unit"]
    summary = SplitSummary.from_dict(old)
    assert (summary.lag, summary.lag_unit) == (old["millis_behind_latest"], "ms")


def test_a_summary_or_manifest_from_a_newer_release_is_refused():
    old = saved("manifest-kafka-incremental.json")
    with pytest.raises(RecordVersionError, match="split summary version 2 was written by a "
                                                 "newer streamslice"):
        SplitSummary.from_dict({**old["splits"][0], "version": 2})
    with pytest.raises(RecordVersionError, match="manifest version 2 was written by a newer"):
        Manifest.from_dict({**old, "version": 2})
    with pytest.raises(RecordError, match=r"split summary version 1: Expected `int`, got `str` "
                                          r"- at `\$.records`"):
        SplitSummary.from_dict({**old["splits"][0], "records": "3"})
    with pytest.raises(RecordError, match="unknown field 'rows' for manifest version 1"):
        Manifest.from_dict({**old, "rows": 3})


@pytest.mark.parametrize("name", ["kafka-incremental-gap", "kafka-interval",
                                  "kinesis-incremental", "kinesis-interval-event-time"])
def test_run_metrics_are_written_as_before_plus_their_version(name):
    """The asset event's extra keeps every key, and only the keys, it had."""
    old = saved("run-metrics.json")[name]
    metrics = RunMetrics.from_dict(old)
    assert metrics.to_dict() == {**old, "version": 1}
    assert metrics.records == old["records"] and metrics.positions == old["positions"]


def test_run_metrics_from_before_lag_unit_and_positions_read_with_defaults():
    """The first releases' extra had no lag_unit, lag_by_split, positions or published (the
    saved one, less what came later); the page infers the unit from the figure given."""
    old = saved("run-metrics.json")["kinesis-incremental"]
    for later in ("lag_unit", "lag_by_split", "positions", "published"):
        del old[later]
    metrics = RunMetrics.from_dict(old)
    assert (metrics.lag_unit, metrics.lag_by_split, metrics.positions, metrics.published) == (
        None, {}, {}, None)
    assert Run("r", "success", metrics=metrics).lag_unit == "ms"
    with pytest.raises(RecordVersionError, match="run metrics version 2 was written by a newer"):
        RunMetrics.from_dict({**old, "version": 2})
    with pytest.raises(RecordError, match="Object missing required field `records`"):
        RunMetrics.from_dict({k: v for k, v in old.items() if k != "records"})
