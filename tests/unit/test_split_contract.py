"""The Split contract (``splits.Split``) and how positions and lag are shown, for every
registered source: what the planner, commit, CLI and UI rely on without knowing the source."""
import json

import pytest

from streamslice.reading.stats import SplitSummary
from streamslice.records import JsonObject
from streamslice.sources import SOURCES, lag_unit, position_text, source_class
from streamslice.splits import LagUnit, PositionText, Split, elide, lag_text, total_lag
from tests.support.records import manifest

SEQ = "49651234567890123456789012345678901234567890123456789012"

# One planned split per source, as the plan's JSON holds it.
SPLITS: dict[str, JsonObject] = {
    "kafka": {"id": 3, "topic": "orders", "partition": 2, "start": 40, "stop": 90,
              "log_start": 0, "high_watermark": 100},
    "kinesis": {"id": 1, "stream": "trips", "shard_id": "shardId-000000000001",
                "start": {"type": "AFTER_SEQUENCE_NUMBER", "seq": SEQ},
                "stop_before": 1_714_521_600_000},
    "files": {"id": 0, "path": "2024/a.jsonl", "start": 3, "stop": 10, "start_byte": 40,
              "stop_byte": 120, "modified_ms": 1_714_521_600_000},
}


def split_of(kind, data):
    return source_class(kind).serializer().from_dict(data)


def test_every_registered_source_is_covered_here():
    assert set(SPLITS) == set(SOURCES)


@pytest.mark.parametrize("kind", sorted(SPLITS))
def test_every_source_split_meets_the_contract_and_round_trips(kind):
    cls = source_class(kind)
    serializer = cls.serializer()
    split = serializer.from_dict(SPLITS[kind])
    assert isinstance(split, Split)
    assert split.lag_unit == cls.lag_unit == lag_unit(kind)
    assert SPLITS[kind].items() <= serializer.to_dict(split).items()
    assert serializer.from_dict(json.loads(json.dumps(serializer.to_dict(split)))) == split
    # start and end are JSON values the source renders
    json.dumps([split.start, split.end])
    assert isinstance(serializer.position_text(split.start), PositionText)
    assert isinstance(serializer.position_text(split.end), PositionText)



@pytest.mark.parametrize("kind", sorted(SPLITS))
def test_a_sources_serializer_reads_its_splits_exactly_and_the_registry_through_it(kind):
    """The split serializer role: what the plan holds for a split is read field by field, a
    field it does not know or one missing is a PlanError naming it, never dropped; the
    registry's ``read_split`` (what ``read_plan`` uses) is the source's own serializer."""
    from streamslice.errors import PlanError
    from streamslice.sources import read_split
    serializer = source_class(kind).serializer()
    assert read_split(kind, SPLITS[kind]) == serializer.from_dict(SPLITS[kind])
    with pytest.raises(PlanError, match="unknown field 'surprise'"):
        serializer.from_dict({**SPLITS[kind], "surprise": 1})
    with pytest.raises(PlanError, match="field 'id' is missing"):
        serializer.from_dict({k: v for k, v in SPLITS[kind].items() if k != "id"})
    with pytest.raises(PlanError, match="nosuchsource"):
        read_split("nosuchsource", SPLITS[kind])

def test_a_kafka_split_is_an_offset_range_with_records_behind():
    split = split_of("kafka", SPLITS["kafka"])
    assert (split.key, split.start, split.end, split.size) == ("orders:2", 40, 90, 50)
    assert (split.lag, split.lag_unit, split.offset_range) == (60, "records", (40, 90))


def test_a_file_split_is_a_line_range():
    split = split_of("files", SPLITS["files"])
    assert (split.key, split.start, split.end, split.size, split.lag) == \
        ("2024/a.jsonl", 3, 10, 7, 7)
    assert (split.lag_unit, split.offset_range) == ("records", (3, 10))


def test_a_kinesis_split_ends_at_an_arrival_time_and_its_lag_is_the_readers():
    split = split_of("kinesis", SPLITS["kinesis"])
    assert split.key == "trips:shardId-000000000001"
    assert split.end == {"arrived_before": 1_714_521_600_000}
    assert (split.size, split.lag, split.lag_unit, split.offset_range) == (None, None, "ms", None)
    shard_end = split_of("kinesis", {**SPLITS["kinesis"],
                                                         "stop_before": 2 ** 62})
    assert shard_end.end == {"shard_end": True}
    assert position_text("kinesis", shard_end.end).full == "SHARD_END"


@pytest.mark.parametrize("kind, value, short, full", [
    ("kafka", 4968, "4968", "4968"),
    ("kafka", 123456789012345, "123456789012345", "123456789012345"),  # offsets are not cut
    ("kafka", -2, "earliest", "earliest"),
    ("kafka", -1, "latest", "latest"),
    ("kinesis", {"after": SEQ}, "after 4965…12", f"after {SEQ}"),
    ("kinesis", {"at": SEQ}, "at 4965…12", f"at {SEQ}"),
    ("kinesis", SEQ, "4965…12", SEQ),
    ("kinesis", {"type": "AFTER_SEQUENCE_NUMBER", "seq": SEQ}, "after 4965…12",
     f"after {SEQ}"),
    ("kinesis", {"type": "AT_SEQUENCE_NUMBER", "seq": SEQ}, "at 4965…12", f"at {SEQ}"),
    ("kinesis", {"type": "TRIM_HORIZON"}, "TRIM_HORIZON", "TRIM_HORIZON"),
    ("kinesis", {"type": "AT_TIMESTAMP", "timestamp": 1_714_521_600_000},
     "AT_TIMESTAMP 2024-05-01T00:00:00.000Z", "AT_TIMESTAMP 2024-05-01T00:00:00.000Z"),
    ("kinesis", {"at_timestamp": 1_714_521_600_000}, "at 2024-05-01T00:00:00.000Z",
     "at 2024-05-01T00:00:00.000Z"),
    ("kinesis", {"finished": True}, "SHARD_END", "SHARD_END"),
    ("kinesis", {"arrived_before": 0}, "arrived before 1970-01-01T00:00:00.000Z",
     "arrived before 1970-01-01T00:00:00.000Z"),
    ("kafka", None, "-", "-"),
    ("kinesis", None, "-", "-"),
])
def test_positions_have_a_short_and_a_full_text(kind, value, short, full):
    text = position_text(kind, value)
    assert (text.short, text.full, str(text)) == (short, full, full)


@pytest.mark.parametrize("kind, value, full", [
    ("kafka", {"after": "9"}, '{"after": "9"}'),  # not a Kafka offset: shown as it is
    ("kinesis", 17, "17"),
    ("nosuchsource", {"x": 1}, '{"x": 1}'),
    (None, "abc", "abc"),
])
def test_a_position_a_source_does_not_know_is_shown_as_it_is(kind, value, full):
    assert position_text(kind, value).full == full


def test_elide_keeps_short_text_whole():
    assert elide("12345678901") == "1234…01"
    assert elide("1234567890") == "1234567890"
    assert elide("abcdefghijklmnop", 3, 0) == "abc…"


@pytest.mark.parametrize("value, unit, text", [
    (None, "records", "-"), (0, "records", "0 records"), (1, "records", "1 record"),
    (1234567, "records", "1,234,567 records"), (2500, "ms", "2.5 s behind"),
    (3000, "ms", "3 s behind"), (200_000, "ms", "3 min 20 s behind"),
    (120_000, "ms", "2 min behind"), (7_500_000, "ms", "2 h 5 min behind"),
    (7_200_000, "ms", "2 h behind"), (5, None, "5 records"),
])
def test_lag_text_says_its_unit(value, unit, text):
    assert lag_text(value, unit) == text


def test_run_lag_adds_records_but_takes_the_worst_time_behind():
    lags: list[tuple[int | None, LagUnit]] = [(5, "records"), (7, "records"), (900, "ms"),
                                               (100, "ms"), (None, "ms")]
    summaries = [SplitSummary(i, "k", 0, 1, lag=lag, lag_unit=unit)
                 for i, (lag, unit) in enumerate(lags)]
    assert total_lag(summaries) == {"records": 12, "ms": 900}
    assert total_lag([]) == {"records": None, "ms": None}


def test_summaries_from_before_lag_unit_still_read():
    def lag(**old):
        s = SplitSummary.from_dict({"split": 0, "key": "k", "start": 0, "stop": 1, **old})
        return s.lag, s.lag_unit
    assert lag(lag=None, millis_behind_latest=40) == (40, "ms")
    assert lag(lag=3) == (3, "records")


def test_every_registered_source_names_its_lag_unit():
    for kind in SOURCES:
        assert source_class(kind).lag_unit in ("records", "ms")


def test_no_code_outside_a_source_package_names_a_source():
    """The contract's point: outside kafka/, kinesis/ and files/, code reaches a source only
    through sources.Source and splits.Split. A string literal naming a source kind, a branch
    on ``.kind``, or a getattr on a source or split is a switch that a fourth source would
    have to edit. (The registry names them; the glue's Kafka connection hook and the AWS
    connection reader are connection kinds, not sources.)"""
    import re
    from pathlib import Path

    import streamslice
    root = Path(streamslice.__file__).parent
    # config/extras.py names the package's extras, two of which are called as their sources are
    allowed = {"sources.py", "airflow/hooks.py", "config/extras.py"}
    kinds = "|".join(SOURCES)
    switch = re.compile(rf"""["']({kinds})["']|source\.kind ==|\.source ==|"""
                        r"getattr\((cfg\.)?(source|split)\b|isinstance\([^)]*Split\)")
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in SOURCES or rel in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            # "files" is also the name of the file-system publisher (its class says so)
            if "publisher" in code or code.strip() == 'name: ClassVar[str] = "files"':
                continue
            if switch.search(code):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def _manifest(*splits):
    return manifest(partition="batch=00000001", records=3, batch=1, plan_id="p", splits=splits)


def test_a_runs_metrics_carry_its_lag_in_its_unit():
    """The asset event's extra (``tasks.run_metrics``), what downstream DAGs and the page
    read: records behind add up, milliseconds behind take the worst shard, each with its unit;
    summaries written before ``lag_unit`` existed read the same."""
    from streamslice.airflow.tasks import run_metrics
    kafka = run_metrics(_manifest({"key": "t:0", "lag": 5, "lag_unit": "records"},
                                  {"key": "t:1", "lag": 7, "lag_unit": "records"}))
    assert (kafka.lag_records, kafka.millis_behind_latest, kafka.lag_unit,
            kafka.lag_by_split) == (12, None, "records", {"t:0": 5, "t:1": 7})
    kinesis = run_metrics(_manifest({"key": "s:a", "lag": 900, "lag_unit": "ms"},
                                    {"key": "s:b", "lag": None, "lag_unit": "ms"}))
    assert (kinesis.lag_records, kinesis.millis_behind_latest, kinesis.lag_unit,
            kinesis.lag_by_split) == (None, 900, "ms", {"s:a": 900, "s:b": None})
    older = run_metrics(_manifest({"key": "s:a", "lag": None, "millis_behind_latest": 40}))
    assert (older.millis_behind_latest, older.lag_unit, older.lag_by_split) == \
        (40, "ms", {"s:a": 40})
