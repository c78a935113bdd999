"""The Kafka reader's raw batch → Arrow conversion (no broker: RawBatch is what the fetch loop
yields; the real client is covered by tests/integration/test_kafka_*.py)."""
import pyarrow as pa

from streamslice.kafka.fetch import RawBatch
from streamslice.kafka.reader import KafkaSplitReader
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import Interval
from streamslice.reading.decode import Decoder

T0 = 1_714_521_600_000


def reader(decoder=None, interval=None, split=None):
    return KafkaSplitReader(split or KafkaSplit(0, "t", 3, 0, 100), properties={},
                            decoder=decoder or Decoder(), interval=interval)


def raw(offsets, types=None, headers=None, values=None, stamps=None):
    n = len(offsets)
    return RawBatch(list(offsets), stamps or [T0 + o for o in offsets], types or [0] * n,
                    [b"k%d" % o for o in offsets], values or [b"v%d" % o for o in offsets],
                    headers or [None] * n)


def test_offsets_with_and_without_gaps():
    for offsets in ([5, 6, 7, 8], [5, 7, 8, 20], [9]):
        batch = reader().to_arrow(raw(offsets))
        assert batch.column("offset").to_pylist() == offsets
        assert batch.column("value").to_pylist() == [b"v%d" % o for o in offsets]
        assert batch.column("partition").to_pylist() == [3] * len(offsets)


def test_timestamp_types_and_headers_per_record():
    batch = reader().to_arrow(raw([0, 1, 2], types=[0, 1, -1],
                                  headers=[None, [("h", b"1")], None]))
    assert batch.column("timestampType").to_pylist() == [0, 1, -1]
    assert batch.column("timestamp").type == pa.timestamp("us", tz="UTC")
    assert batch.column("headers").to_pylist() == [None, [{"key": "h", "value": b"1"}], None]
    same = reader().to_arrow(raw([0, 1], types=[1, 1]))
    assert same.column("timestampType").to_pylist() == [1, 1]
    assert same.column("headers").null_count == 2


def test_interval_keeps_on_time_and_late_records_only():
    interval = Interval(T0 + 10, T0 + 20)
    split = KafkaSplit(0, "t", 0, 0, 100, late_from=3, owned_until=30)
    r = reader(interval=interval, split=split)
    # offsets 0..4 stamped 0..4 ms (before the interval), 10..24 inside, 25..29 after it
    offsets = [0, 1, 2, 3, 4, *range(10, 30)]
    stamps = [T0 + o for o in offsets[:5]] + [T0 + 10 + i for i in range(10)] + \
        [T0 + 25 + i for i in range(10)]
    batch = r.to_arrow(raw(offsets, stamps=stamps))
    kept = batch.column("offset").to_pylist()
    assert kept == [3, 4, *range(10, 20)]
    assert batch.column("is_late").to_pylist() == [True, True] + [False] * 10
    assert r.stats.summary.outside_interval == len(offsets) - len(kept)
    assert r.stats.summary.late == 2 and r.stats.summary.records == len(kept)


def test_undecodable_records_go_to_dead_letters_with_their_headers():
    r = reader(decoder=Decoder(value="json", schema=[("n", "long")]))
    batch = r.to_arrow(raw([4, 5, 6], values=[b'{"n": 1}', b"not json", b'{"n": 3}'],
                           headers=[None, [("trace", b"x")], None]))
    assert batch.column("n").to_pylist() == [1, 3]
    assert batch.column("offset").to_pylist() == [4, 6]
    dead = pa.Table.from_batches(r._dead)
    assert dead.column("offset").to_pylist() == [5]
    assert dead.column("headers").to_pylist() == [[{"key": "trace", "value": b"x"}]]
    assert dead.column("error").to_pylist()[0].startswith("invalid JSON")


def test_nested_json_rows_and_dead_letters_with_the_bad_fields_path():
    from streamslice.formats import FormatSpec
    ddl = "id BIGINT, user STRUCT<name: STRING, tags: ARRAY<STRING>>, amount DECIMAL(9,2)"
    values = [b'{"id": 1, "user": {"name": "a", "tags": ["x"]}, "amount": 1.5}',
              b'{"id": 2, "user": {"tags": ["x", "y", "z", 4]}}',
              b'{"id": 3, "amount": 1.234}', b'{"id": 4, "user": {"name": "d"}}']
    r = reader(Decoder(FormatSpec("json", ddl)))
    batch = r.to_arrow(raw([0, 1, 2, 3], values=values))
    assert batch.schema.field("user").type == pa.struct(
        [("name", pa.string()), ("tags", pa.list_(pa.field("element", pa.string())))])
    assert batch.column("offset").to_pylist() == [0, 3]
    assert batch.column("user").to_pylist() == [{"name": "a", "tags": ["x"]},
                                                {"name": "d", "tags": None}]
    dead = pa.Table.from_batches(r._dead).to_pylist()
    assert [(d["offset"], d["error"]) for d in dead] == [
        (1, "field 'user.tags[3]': expected string, got 4"),
        (2, "field 'amount': 1.234 does not fit decimal(9,2) (more than 2 decimal places)")]
    assert dead[0]["value"] == values[1]  # the record as it was read


def test_on_error_fail_stops_at_the_first_bad_record_naming_it():
    import pytest

    from streamslice.errors import DecodeError
    from streamslice.formats import FormatSpec
    r = reader(Decoder(FormatSpec("json", "user STRUCT<tags: ARRAY<INT>>"), on_error="fail"))
    with pytest.raises(DecodeError, match=r"t:3 offset 8: field 'user.tags\[1\]': expected "
                                          r"int, got \"x\" \(format.on_error is fail\)"):
        r.to_arrow(raw([7, 8, 9], values=[b'{"user": {}}', b'{"user": {"tags": [1, "x"]}}',
                                          b"{"]))
