"""The Kafka planner over a fake admin client (our own logic only: the real broker is covered
by the integration tests). The fake answers offset look-ups from an in-memory log."""
import pytest

from streamslice.commit.checkpoint import Checkpoint
from streamslice.config import parse_pipeline
from streamslice.errors import DataLossError, PlanError, SourceError
from streamslice.kafka.admin import TopicPartition
from streamslice.kafka.planner import plan_kafka as _plan_kafka
from streamslice.planning.plan import Interval
from streamslice.sources import PlanRequest


def plan_kafka(src, admin, mode, interval=None, checkpoint=None):
    request = PlanRequest(mode=mode, properties={}, now_ms=0, interval=interval,
                          checkpoint=Checkpoint(positions=checkpoint) if checkpoint else None)
    planned = _plan_kafka(src, admin, request)
    return planned.splits, planned.gaps, planned.next_positions


class FakeAdmin:
    servers = "fake:9092"

    def __init__(self, logs, log_start=None):
        self.logs = logs  # {(topic, partition): [timestamps in offset order]}
        self.start = log_start or {}

    def topics(self):
        return sorted({t for t, _ in self.logs})

    def partitions(self, topic):
        parts = sorted(p for t, p in self.logs if t == topic)
        if not parts:
            raise SourceError(f"topic {topic!r} does not exist on {self.servers}")
        return [TopicPartition(topic, p) for p in parts]

    def beginning_offsets(self, tps):
        return {tp: self.start.get(tuple(tp), 0) for tp in tps}

    def end_offsets(self, tps):
        return {tp: len(self.logs[tuple(tp)]) for tp in tps}

    def offsets_for_times(self, times, ends=None):
        out = {}
        for tp, ms in times.items():
            log = self.logs[tuple(tp)]
            lo = self.start.get(tuple(tp), 0)
            out[tp] = next((o for o in range(lo, len(log)) if log[o] >= ms), len(log))
        return out


def source(extra="", mode="incremental", topics="[t]"):
    head = ("mode: interval\nschedule: '@hourly'\nstart_date: 2024-01-01T00:00:00Z\n"
            if mode == "interval" else "mode: incremental\n")
    return parse_pipeline(f"""{head}kafka:
  bootstrap_servers: fake:9092
  topics: {topics}
{extra}output:
  path: /x
""").source


LOGS = {("t", 0): list(range(0, 100, 10)), ("t", 1): list(range(5, 55, 5))}


def test_incremental_from_checkpoint_with_fallback_for_new_partitions():
    splits, gaps, nxt = plan_kafka(source(), FakeAdmin(LOGS), mode="incremental",
                                   checkpoint={"t:0": 4})
    assert [(s.partition, s.start, s.stop) for s in splits] == [(0, 4, 10), (1, 0, 10)]
    assert [s.lag for s in splits] == [6, 10] and gaps == []
    assert nxt == {"t:0": 10, "t:1": 10}


def test_sub_splits_keep_partition_ranges_contiguous():
    splits, _, _ = plan_kafka(source("  max_records_per_split: 3\n"), FakeAdmin(LOGS),
                              mode="incremental")
    p0 = [(s.start, s.stop) for s in splits if s.partition == 0]
    assert p0 == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert [s.id for s in splits] == list(range(len(splits)))


def test_start_below_log_start_fails_with_the_gap():
    admin = FakeAdmin(LOGS, log_start={("t", 0): 7})
    with pytest.raises(DataLossError, match=r"t:0: records expired between offset 2 and 7"):
        plan_kafka(source(), admin, mode="incremental", checkpoint={"t:0": 2, "t:1": 0})
    splits, gaps, _ = plan_kafka(source("  on_data_loss: skip\n"), admin, mode="incremental",
                                 checkpoint={"t:0": 2, "t:1": 0})
    assert [g.to_dict() for g in gaps] == [{"key": "t:0", "from": 2, "to": 7,
                                           "reason": "expired"}]
    assert (splits[0].start, splits[0].stop) == (7, 10)


def test_checkpoint_past_the_end_means_a_recreated_topic():
    with pytest.raises(DataLossError, match="start offset 50 is past the end of the log"):
        plan_kafka(source(), FakeAdmin(LOGS), mode="incremental", checkpoint={"t:0": 50})


def test_stop_offsets_beyond_the_high_watermark_are_refused():
    src = source("  stop: {offsets: {'t:0': 99}}\n")
    with pytest.raises(PlanError, match="stop offset 99 is beyond the high watermark 10"):
        plan_kafka(src, FakeAdmin(LOGS), mode="incremental")


def test_interval_bounds_and_a_timestamp_past_the_end_resolves_to_the_end():
    iv = Interval(20, 60, allowed_lateness=10)
    splits, _, nxt = plan_kafka(source(mode="interval"), FakeAdmin(LOGS), mode="interval",
                                interval=iv)
    s0 = splits[0]
    assert (s0.start, s0.stop, s0.late_from, s0.owned_until) == (2, 7, 3, 6)
    s1 = splits[1]  # partition 1 ends at ts 50: b(70) is the end, never an error
    assert (s1.start, s1.stop, s1.owned_until) == (3, 10, 10)
    assert nxt == {"t:0": 6, "t:1": 10}


def test_unknown_topic_is_named():
    with pytest.raises(SourceError, match="topic 'nope' does not exist on fake:9092"):
        plan_kafka(source(topics="[nope]"), FakeAdmin(LOGS), mode="incremental")


def test_topic_pattern_matches_whole_names_and_partitions_name_exactly_what_is_read():
    """The sources page's topics / topic_pattern / partitions: a pattern must match the whole topic
    name (Flink's setTopicPattern; Spark's subscribePattern, which finds it anywhere, is
    tests/integration/test_spark_datasource.py's), and explicit partitions read only those."""
    logs = {("t", 0): [1], ("t", 1): [1, 2], ("t-dlq", 0): [1], ("xt", 0): [1]}
    pattern = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'fake:9092', "
                             "topic_pattern: 't.*'}\noutput: {path: /x}\n").source
    splits, _, _ = plan_kafka(pattern, FakeAdmin(logs), mode="incremental")
    assert sorted((s.topic, s.partition) for s in splits) == [("t", 0), ("t", 1), ("t-dlq", 0)]
    for given in ('["t:1"]', "[{topic: t, partition: 1}]"):
        assigned = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'fake:9092', "
                                  f"partitions: {given}}}\noutput: {{path: /x}}\n").source
        splits, _, nxt = plan_kafka(assigned, FakeAdmin(logs), mode="incremental")
        assert [(s.topic, s.partition, s.start, s.stop) for s in splits] == [("t", 1, 0, 2)]
        assert nxt == {"t:1": 2}
    missing = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'fake:9092', "
                             "partitions: ['t:7']}\noutput: {path: /x}\n").source
    with pytest.raises(PlanError, match=r"partition t:7 does not exist on fake:9092 \(topic 't' "
                                        r"has 2 partitions\)"):
        plan_kafka(missing, FakeAdmin(logs), mode="incremental")


def test_timestamp_and_offset_bounds_as_flinks_offsets_initializers():
    """``start``/``stop`` ``{timestamp: …}`` resolve to the first offset whose timestamp is
    at or after it (Flink's OffsetsInitializer.timestamp; the stop is exclusive, as
    setBounded's), ``{offsets: …}`` are taken as given, ``latest`` is the high watermark."""
    src = source("  start: {timestamp: 20}\n  stop: {timestamp: 35}\n")
    splits, _, nxt = plan_kafka(src, FakeAdmin(LOGS), mode="incremental")
    assert [(s.partition, s.start, s.stop) for s in splits] == [(0, 2, 4), (1, 3, 6)]
    assert nxt == {"t:0": 4, "t:1": 6}
    src = source("  start: {offsets: {'t:0': 1, 't:1': 2}}\n  stop: {offsets: {'t:0': 3, "
                 "'t:1': 9}}\n")
    splits, _, _ = plan_kafka(src, FakeAdmin(LOGS), mode="incremental")
    assert [(s.partition, s.start, s.stop) for s in splits] == [(0, 1, 3), (1, 2, 9)]
    splits, _, nxt = plan_kafka(source("  start: latest\n"), FakeAdmin(LOGS),
                                mode="incremental")
    assert [(s.partition, s.start, s.stop) for s in splits] == [(0, 10, 10), (1, 10, 10)]
    assert nxt == {"t:0": 10, "t:1": 10}
