"""Spark's parse modes for DataFrame reads (``reading.malformed``,
``spark.plan_options.parse_mode``): the options, the schema with its corrupt-record column,
and what each mode makes of a batch of dead letters. Plain Arrow batches; the same over a
real broker and Spark is tests/integration/test_spark_parse_modes.py."""

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from streamslice.errors import ConfigError, DecodeError
from streamslice.files.reader import DEAD_LETTER_SCHEMA as FILES_DEAD
from streamslice.kafka.reader import DEAD_LETTER_SCHEMA as KAFKA_DEAD
from streamslice.kafka.reader import record_schema
from streamslice.kinesis.reader import DEAD_LETTER_SCHEMA as KINESIS_DEAD
from streamslice.planning.plan import ReadPlan
from streamslice.reading.decode import Decoder
from streamslice.reading.malformed import Malformed, ParseMode
from streamslice.sources import source_class
from streamslice.spark.plan_options import parse_mode
from tests.support.checks import present

if TYPE_CHECKING:
    from streamslice.kafka.split import KafkaSplit

RAW = [pa.field("key", pa.binary()), pa.field("value", pa.binary())]


def mode(plan_on_error=None, **options):
    plan: ReadPlan[KafkaSplit] = ReadPlan(
        pipeline="p", source="kafka", mode="incremental", planned_at=0, splits=[],
        partition="batch=00000001", decode={"on_error": plan_on_error} if plan_on_error else {})
    if plan_on_error:
        options["plan"] = "{}"
    return parse_mode({k.lower(): v for k, v in options.items()}, plan)


def test_mode_options_as_spark_reads_them_and_the_older_option():
    assert mode() == ParseMode("PERMISSIVE", "_corrupt_record")  # Spark's defaults
    assert mode(mode="dropMalformed").mode == "DROPMALFORMED"  # any case
    assert mode(onDecodeError="fail").mode == "FAILFAST"
    assert mode(onDecodeError="dead_letter").mode == "PERMISSIVE"
    assert mode("fail").mode == "FAILFAST"  # a plan's on_error
    assert mode("dead_letter").mode == "PERMISSIVE"
    assert mode(columnNameOfCorruptRecord="bad").column == "bad"
    with pytest.raises(ConfigError, match="option mode: 'LENIENT' is not one of"):
        mode(mode="lenient")
    with pytest.raises(ConfigError, match="options mode and onDecodeError say the same"):
        mode(mode="FAILFAST", onDecodeError="fail")
    with pytest.raises(ConfigError, match="option onDecodeError: 'skip' is not one of"):
        mode(onDecodeError="skip")


def test_the_corrupt_record_column_holds_each_sources_raw_parts():
    """Kafka: key and value; Kinesis: data; files: value (the docs' three shapes), each a
    binary column of the source's dead letters."""
    shapes = {"kafka": (("key", "value"), KAFKA_DEAD), "kinesis": (("data",), KINESIS_DEAD),
              "files": (("value",), FILES_DEAD)}
    for kind, (raw, dead) in shapes.items():
        assert source_class(kind).readers().raw_columns == raw
        assert all(dead.field(name).type == pa.binary() for name in raw)


def test_permissive_adds_the_column_only_where_a_record_can_fail():
    decoder = Decoder("json", schema="id BIGINT NOT NULL")
    records = record_schema(decoder, False, include_headers=False)
    schema = ParseMode().schema(records, RAW, can_fail=True)
    assert schema.names[-1] == "_corrupt_record" and all(f.nullable for f in schema)
    assert schema.field("_corrupt_record").type == pa.struct(
        [*RAW, pa.field("error", pa.string())])
    assert ParseMode().schema(records, RAW, can_fail=False) is records
    assert ParseMode("DROPMALFORMED").schema(records, RAW, can_fail=True) is records
    with pytest.raises(ConfigError, match="the column 'id' would be there twice"):
        ParseMode(column="ID").schema(records, RAW, can_fail=True)


def dead_letters():
    return pa.RecordBatch.from_pylist([
        {"key": b"k1", "value": b"{x", "topic": "t", "partition": 0, "offset": 4,
         "timestamp": 0, "timestampType": 0, "headers": [], "error": "invalid JSON: …"},
        {"key": None, "value": b"[]", "topic": "t", "partition": 0, "offset": 9,
         "timestamp": 0, "timestampType": 0, "headers": [], "error": "expected a JSON "
                                                                        "object, got list"}],
        schema=KAFKA_DEAD)


def test_each_mode_with_a_batch_of_dead_letters(caplog):
    decoder = Decoder("json", schema="id BIGINT NOT NULL")
    records = record_schema(decoder, False, include_headers=False)
    permissive = Malformed(ParseMode(), ParseMode().schema(records, RAW, True), "t:0")
    rows = present(permissive.dead(dead_letters())).to_pylist()
    assert [(r["id"], r["offset"], r["key"], r["_corrupt_record"]) for r in rows] == [
        (None, 4, b"k1", {"key": b"k1", "value": b"{x", "error": "invalid JSON: …"}),
        (None, 9, None, {"key": None, "value": b"[]",
                         "error": "expected a JSON object, got list"})]
    decoded = pa.RecordBatch.from_pylist([{"id": 1, "topic": "t", "partition": 0, "offset": 5,
                                           "timestamp": 0, "timestampType": 0}], records)
    assert permissive.rows(decoded).to_pylist()[0]["_corrupt_record"] is None
    with caplog.at_level("WARNING", logger="streamslice.spark"):
        permissive.log(10)
    assert caplog.messages == ["t:0: 2 of 10 records are malformed (mode PERMISSIVE: kept as "
                               "rows with _corrupt_record); first: offset 4: invalid JSON: …; "
                               "offset 9: expected a JSON object, got list"]

    dropping = Malformed(ParseMode("DROPMALFORMED"), records, "t:0")
    assert dropping.dead(dead_letters()) is None and dropping.count == 2
    assert dropping.rows(decoded) is decoded

    failing = Malformed(ParseMode("FAILFAST"), records, "t:0")
    with pytest.raises(DecodeError) as failed:
        failing.dead(dead_letters())
    assert str(failed.value) == (
        "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in "
        "record parsing: t:0 offset 4: invalid JSON: …. Parse Mode: FAILFAST. To process "
        "malformed records as null result, try setting the option 'mode' as 'PERMISSIVE'.")
