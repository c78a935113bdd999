"""Spark's Kafka streaming options and read limits (``kafka.spark_stream``): option checks in
Spark's order with Spark's texts, Spark's rateLimit and delayBatch, and the offset JSON. No
broker: ``Latest`` below stands in for the broker's end offsets (it fakes the look-up only,
to cover the limits' own logic)."""
import pytest

from streamslice.errors import ConfigError, PlanError
from streamslice.kafka.source import KafkaSource
from streamslice.kafka.spark_stream import (
    KafkaStream,
    from_spark,
    rate_limit,
    stream_from_options,
    time_ms,
    to_spark,
)
from tests.support.checks import present

BASE = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "t"}


def opts(**more):
    return {k.lower(): v for k, v in {**BASE, **more}.items()}


@pytest.mark.parametrize(("options", "message"), [
    ({"endingOffsets": "latest"}, "ending offset not valid in streaming queries"),
    ({"endingOffsetsByTimestamp": '{"t": {"0": 1}}'},
     "ending timestamp not valid in streaming queries"),
    ({"endingTimestamp": "1"}, "ending timestamp not valid in streaming queries"),
    ({"minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"},
     "The value of minOffsetPerTrigger(20) is higher than the maxOffsetsPerTrigger(10)."),
    ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger must be positive"),
    ({"maxTriggerDelay": "soon"}, "option maxTriggerDelay: 'soon' is not a time"),
])
def test_bad_source_options(options, message):
    with pytest.raises(ConfigError) as failed:
        stream_from_options(opts(**options))
    assert message in str(failed.value)


def test_a_stream_starts_at_latest_and_takes_it_in_offsets_json():
    _, _, limits = stream_from_options(opts())
    assert limits.max_offsets is None and limits.max_delay_ms == 15 * 60_000
    source, _, _ = stream_from_options(opts())
    assert present(source.spark).start.kind == "latest"
    source, _, _ = stream_from_options(opts(startingOffsets='{"t": {"0": -1, "1": 5}}'))
    assert present(source.spark).start.offsets == {"t:0": -1, "t:1": 5}


@pytest.mark.parametrize(("text", "ms"), [("100", 100), ("500ms", 500), ("30s", 30_000),
                                          ("15m", 900_000), ("1h", 3_600_000), ("2d", 172_800_000)])
def test_max_trigger_delay_as_spark_reads_time_strings(text, ms):
    assert time_ms(text, "maxTriggerDelay") == ms


def test_offsets_json_is_sparks_in_a_fixed_order():
    offsets = {"b:10": 3, "b:2": 1, "a:0": 7}
    assert list(to_spark(offsets)) == ["a", "b"]
    b = to_spark(offsets)["b"]
    assert isinstance(b, dict) and list(b) == ["2", "10"]
    assert from_spark(to_spark(offsets)) == offsets


def test_maxOffsetsPerTrigger_is_shared_in_proportion_and_small_partitions_get_one():
    """Spark's rateLimit: 100, 10 and 1 records waiting, 10 a batch → 9 + 1 + 1."""
    start = {"t:0": 0, "t:1": 0, "t:2": 0}
    until = {"t:0": 100, "t:1": 10, "t:2": 1}
    assert rate_limit(10, start, until, {}) == {"t:0": 9, "t:1": 1, "t:2": 1}
    # a partition new since the start begins at its earliest offset
    assert rate_limit(10, {"t:0": 0}, {"t:0": 10, "t:1": 15}, {"t:1": 5}) == \
        {"t:0": 5, "t:1": 10}
    assert rate_limit(10, until, until, {}) == until  # nothing waiting


class Latest(KafkaStream):
    """The broker's end offsets given by the test."""

    end: dict = {}

    def _latest(self):
        return dict(self.end)


def stream(**options):
    return KafkaSource.stream(opts(**options))


def test_minOffsetsPerTrigger_holds_a_batch_back_until_maxTriggerDelay(monkeypatch):
    s = stream(minOffsetsPerTrigger="10", maxTriggerDelay="1m")
    s.__class__ = Latest
    clock = [1_000_000.0]
    monkeypatch.setattr("streamslice.kafka.spark_stream.time.time", lambda: clock[0])
    start = {"t:0": 0}
    s.end = {"t:0": 3}
    assert s.next_end(start, all_available=False) == {"t:0": 3}  # the first batch: no wait
    s.end = {"t:0": 8}
    start = {"t:0": 3}
    assert s.next_end(start, all_available=False) == start  # 5 waiting, fewer than 10
    s.end = {"t:0": 13}
    assert s.next_end(start, all_available=False) == {"t:0": 13}  # 10 waiting
    s.end = {"t:0": 14}
    start = {"t:0": 13}
    assert s.next_end(start, all_available=False) == start
    clock[0] += 61  # maxTriggerDelay passed since the last batch
    assert s.next_end(start, all_available=False) == {"t:0": 14}


def test_Trigger_Once_reads_all_available_whatever_the_limits():
    s = stream(maxOffsetsPerTrigger="1", minOffsetsPerTrigger="1")
    s.__class__ = Latest
    s.end = {"t:0": 100}
    assert s.next_end({"t:0": 0}, all_available=True) == {"t:0": 100}


def test_Trigger_AvailableNow_fixes_the_end_at_its_first_look():
    s = stream()
    s.__class__ = Latest
    s.prepare_available_now()
    s.end = {"t:0": 10}
    assert s.next_end({"t:0": 0}, all_available=False) == {"t:0": 10}
    s.end = {"t:0": 50}
    assert s.next_end({"t:0": 10}, all_available=False) == {"t:0": 10}
    assert s.report_latest() == {"t": {"0": 10}}


def test_a_stream_ships_to_executors_without_its_connection():
    import pickle
    s = stream()
    s._admin = object()
    assert pickle.loads(pickle.dumps(s))._admin is None


def test_minOffsetsPerTrigger_holds_nothing_back_under_Trigger_AvailableNow():
    """Nothing more will come: the last, small batch is read at once."""
    s = stream(minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    s.__class__ = Latest
    s.prepare_available_now()
    s.last_trigger_ms = 10 ** 15  # a batch has just run
    s.end = {"t:0": 3}
    assert s.next_end({"t:0": 0}, all_available=False) == {"t:0": 3}


@pytest.mark.parametrize("offset", [{"t": {"0": "7"}}, {"t": {"x": 7}}, {"t": 7},
                                    {"t": {"0": True}}])
def test_an_offset_json_that_is_not_partitions_to_offsets_is_one_line(offset):
    with pytest.raises(PlanError, match="Spark offset of t"):
        from_spark(offset)
