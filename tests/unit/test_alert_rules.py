"""Alert rules: the ``alerts:`` block as users write it, and which alerts a committed run's
manifest raises (pure functions: no Airflow, no notifier)."""
import pytest

from streamslice.commit.checkpoint import Checkpoint
from streamslice.config.fields import Fields
from streamslice.errors import ConfigError
from streamslice.monitoring.alerts import evaluate, parse_alerts
from tests.support import records


def rules(block):
    return parse_alerts(Fields(block, file="p.yaml", path="alerts"))


def manifest(**kw):
    base = {"partition": "batch=00000001", "records": 10, "dead_letters": 0, "gaps": [],
            "splits": [{"key": "t:0", "lag": 5}, {"key": "t:1", "lag": 30}]}
    base.update(kw)
    return records.manifest(**base)


def test_notifier_entries_as_the_readme_shows_them():
    r = rules({"notifiers": [{"sns": {"topic_arn": "arn:aws:sns:us-east-1:1:t"}},
                             {"log": {}},
                             {"class": "pkg.mod.Notifier", "args": {"channel": "#ops"}}]})
    assert r.notifiers == ({"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:1:t"},
                           {"type": "log"},
                           {"type": "class", "class": "pkg.mod.Notifier",
                            "args": {"channel": "#ops"}})


@pytest.mark.parametrize("entry, message", [
    ({"class": "pkg.N", "args": ["x"]}, "entry 1: args must map the notifier's keyword"),
    ({"class": "nodots"}, "entry 1: class must be a dotted path"),
    ({"sns": {}}, "entry 1: sns needs topic_arn"),
    ({"sns": {"topic_arn": "a", "colour": "red"}}, "sns does not take 'colour'"),
    ({"pager": {}}, "entry 1: 'pager' is not sns, log or class"),
    ({"sns": {"topic_arn": "a"}, "log": {}}, "entry 1 must be one of"),
])
def test_bad_notifier_entries_are_named(entry, message):
    with pytest.raises(ConfigError, match=message):
        rules({"notifiers": [entry]})


def test_thresholds_parse_durations_and_refuse_unknown_keys():
    r = rules({"lag_millis": "10m", "deadline": "1h", "dead_letters": 3})
    assert (r.lag_millis, r.deadline, r.dead_letters) == (600_000, 3_600_000, 3)
    with pytest.raises(ConfigError, match="unknown key 'lag'"):
        rules({"lag": 5})


def test_lag_sums_partitions_and_names_the_worst():
    out = evaluate(rules({"lag_records": 30}), manifest())
    assert [(k, d) for k, _, d in out] == [("lag", {"lag_records": 35, "worst_split": "t:1"})]
    assert evaluate(rules({"lag_records": 35}), manifest()) == []  # not above the threshold


def test_kinesis_lag_uses_the_largest_millis_behind():
    m = manifest(splits=[{"key": "s:a", "millis_behind_latest": 700_000},
                         {"key": "s:b", "millis_behind_latest": 10}])
    (kind, message, details), = evaluate(rules({"lag_millis": "10m"}), m)
    assert kind == "lag" and details == {"millis_behind_latest": 700_000}


def test_dead_letters_empty_streak_and_data_loss():
    m = manifest(dead_letters=3, gaps=[{"key": "t:0", "from": 2, "to": 7, "reason": "expired"}])
    kinds = {k: msg for k, msg, _ in evaluate(rules({"dead_letters": 3, "empty_intervals": 2}),
                                             m, empty_streak=2)}
    assert set(kinds) == {"dead_letters", "empty_intervals", "data_loss"}
    assert "t:0 from 2 to 7 (expired)" in kinds["data_loss"]
    assert evaluate(rules({"dead_letters": 4, "empty_intervals": 3}), manifest(),
                    empty_streak=2) == []


def test_data_loss_alerts_even_without_rules():
    m = manifest(gaps=[{"key": "t:0", "from": 1, "to": 2, "reason": "expired"}])
    assert [k for k, _, _ in evaluate(rules({}), m)] == ["data_loss"]


def test_freshness_is_a_duration_and_stale_data_is_said_with_its_age():
    from streamslice.monitoring.alerts import complete_to, stale
    assert rules({"freshness": "2h"}).freshness == 7_200_000
    with pytest.raises(ConfigError, match="freshness"):
        rules({"freshness": "soon"})
    t0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
    newest = complete_to(Checkpoint(interval_end=t0, committed_at=t0 + 60_000))
    assert newest == t0  # interval mode: the end of the newest interval, not the commit
    assert complete_to(Checkpoint(committed_at=t0, batch=3)) == t0
    assert complete_to(None) is None
    assert stale(7_200_000, newest, t0 + 7_200_000) is None  # at the limit: not yet
    assert stale(7_200_000, newest, t0 + 7_500_000) == (
        "the newest complete data is 2 h 5 min old (complete to 2024-05-01T00:00:00.000Z; "
        "freshness limit 2 h): no run has published since. Is the DAG paused, failing, or "
        "its scheduler stopped?")
    assert stale(None, newest, t0 + 10**9) is None  # no limit set
    assert stale(7_200_000, None, t0) is None  # never published: nothing to measure from


class CountingState:
    """The asset state accessor's get/set, faked to count the writes (our own logic)."""

    def __init__(self, value=None):
        self.value, self.writes = value, 0

    def get(self, key):
        return self.value

    def set(self, key, value):
        self.value, self.writes = value, self.writes + 1


@pytest.mark.parametrize("before, records, after, writes", [
    (None, 5, None, 0), (0, 5, 0, 0), (3, 5, 0, 1), (None, 0, 1, 1), (2, 0, 3, 1)])
def test_the_empty_streak_is_written_only_when_it_changes(before, records, after, writes):
    from streamslice.airflow.alerting import after_commit
    from tests.support.pipelines import parsed

    cfg = parsed("kafka", {"bootstrap_servers": "b:9092", "topics": ["t"]}, output="/lake")
    # no alert rules (a parsed pipeline has empty ones, never None): only the streak is kept
    state = CountingState(before)
    after_commit(cfg, manifest(records=records), None, state)
    assert (state.value, state.writes) == (after, writes)
