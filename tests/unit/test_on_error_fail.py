"""``format.on_error: fail`` with the binary formats, through the shared split-reader loop
(``SplitReader.batches``): the first bad record stops the split with one line naming the
split, the record's position and the reason; the split leaves no summary, no dead letters and
no data file, so the commit can publish nothing and the checkpoint stays where it was.

The sources' clients are faked here (``fetch`` yields raw batches as the Kafka fetch loop and
the Kinesis poller yield them), and so is the registry (a dict behind ``Registry``): what is
tested is the loop's and the formats' own handling. A real run is in
tests/integration/test_avro_registry.py."""
from __future__ import annotations

import base64
import io
import json
import uuid
import zlib
from datetime import datetime, timezone
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from streamslice.errors import DecodeError, from_text
from streamslice.formats import FormatSpec
from streamslice.kafka.fetch import RawBatch
from streamslice.kafka.reader import KafkaSplitReader
from streamslice.kafka.split import KafkaSplit
from streamslice.kinesis.reader import KinesisSplitReader
from streamslice.kinesis.split import KinesisSplit
from streamslice.reading.decode import Decoder
from streamslice.reading.sink import ParquetSink
from streamslice.reading.staging import Staging
from streamslice.schema_registry.base import Registered, Registry, UnknownSchema

TRIP = {"type": "record", "name": "Trip", "fields": [{"name": "id", "type": "long"}]}
GLUE_VERSION = uuid.UUID("b7b4a7f0-1c9f-4a51-8c2a-3a0f6f1c2d3e")


class DictRegistry(Registry):
    """Writer schemas by id (Confluent) or version UUID (Glue); others are unknown."""

    where = "the test registry"

    def __init__(self, schemas: dict[Any, tuple[str, str]]) -> None:
        super().__init__()
        self.schemas = schemas

    def _fetch(self, kind: str, schema: int | str, fmt: str | None) -> Registered:
        if schema not in self.schemas:
            raise UnknownSchema(f"schema {schema} is not in {self.where}")
        typ, text = self.schemas[schema]
        return Registered(typ, text, f"schema {schema}", schema)

    def version(self, subject: str, version: int | None, fmt: str | None = None) -> Registered:
        raise NotImplementedError


def avro(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(TRIP), record)
    return out.getvalue()


def confluent(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def glue(payload: bytes, compression: int = 0) -> bytes:
    return b"\x03" + bytes([compression]) + GLUE_VERSION.bytes + payload


def protobuf_file() -> str:
    from google.protobuf import descriptor_pb2
    proto = descriptor_pb2.FileDescriptorProto(
        name="ev.proto", package="ev", syntax="proto3", message_type=[
            descriptor_pb2.DescriptorProto(name="Event", field=[
                descriptor_pb2.FieldDescriptorProto(name="id", number=1, type=3, label=1)])])
    return base64.b64encode(proto.SerializeToString()).decode()


def registry_decoder(monkeypatch: pytest.MonkeyPatch, fmt: str,
                     schemas: dict[Any, tuple[str, str]]) -> Decoder:
    """A decoder reading ``fmt`` through a registry, with the reader schema pinned in its
    spec as the plan records it, failing on the first bad record."""
    registry = DictRegistry(schemas)
    monkeypatch.setattr("streamslice.formats.schema_based.open_registry",
                        lambda *args: registry)
    reader = next(iter(schemas.values()))
    spec = FormatSpec(fmt, "", {"registry": {"kind": "confluent", "url": "http://r"},
                                "subject": "s", "reader": Registered(*reader, "reader").to_dict()})
    return Decoder(spec, on_error="fail")


class FetchedKafka(KafkaSplitReader):
    """The Kafka split reader over raw batches given here instead of a broker's."""

    def __init__(self, raws: list[RawBatch], **kw: Any) -> None:
        super().__init__(KafkaSplit(3, "trips", 0, 0, 100), properties={}, **kw)
        self.raws = raws

    def fetch(self) -> list[RawBatch]:
        return self.raws


def raw(first: int, values: list[bytes | None]) -> RawBatch:
    n = len(values)
    return RawBatch(list(range(first, first + n)), [1_714_521_600_000] * n, [0] * n,
                    [None] * n, values, [None] * n)


def assert_failed_cleanly(reader: KafkaSplitReader | KinesisSplitReader, staging: Staging,
                          expected: str) -> None:
    with pytest.raises(DecodeError) as err:
        for _ in reader.batches():
            pass
    assert str(err.value) == expected
    assert err.value.split == reader.split.id
    line = err.value.to_line()  # how it crosses from a Spark executor: one line, rebuilt
    assert "\n" not in line and line.startswith(f"streamslice[decode@{reader.split.id}]: ")
    again = from_text(f"Traceback …\n{line}\n")
    assert isinstance(again, DecodeError) and str(again) == expected
    assert staging.summaries() == {}  # no summary: the commit refuses an unfinished split
    assert staging.dead_letter_rows() == 0
    for folder in ("data", "_tmp"):  # and no data file, not even a half-written one
        assert staging.fs.get_file_info(pafs.FileSelector(f"{staging.root}/{folder}",
                                                          allow_not_found=True)) == []


AVRO = ("AVRO", json.dumps(TRIP))
# case: (format, schemas by id, the bad record, the reason given)
CASES: dict[str, tuple[str, dict[Any, tuple[str, str]], bytes, str]] = {
    "avro unknown id": ("avro", {1: AVRO}, confluent(999, avro({"id": 2})),
                        "schema 999 is not in the test registry"),
    "avro truncated frame": ("avro", {1: AVRO}, b"\x00\x00\x01",
                             "truncated Confluent frame: 3 bytes, the header alone is 5"),
    "avro truncated record": ("avro", {1: AVRO}, confluent(1, b""),
                              "truncated or corrupt record (EOFError)"),
    "protobuf index out of range": (
        "protobuf", {1: ("PROTOBUF", protobuf_file())}, confluent(1, b"\x02\x0a\x08\x01"),
        "message index [5] is out of range: level 0 of schema 1 has 1 messages"),
    "glue zlib garbage": ("avro", {str(GLUE_VERSION): AVRO}, glue(b"not zlib at all", 5),
                          "AWS Glue frame: zlib payload does not inflate: Error -3 while "
                          "decompressing data: incorrect header check"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("direct", [False, True], ids=["spark-writes", "reader-writes"])
def test_kafka_split_fails_on_the_first_bad_record(case: str, direct: bool, tmp_path: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fmt, schemas, bad, reason = CASES[case]
    schema_id = next(iter(schemas))
    good = (confluent(schema_id, avro({"id": 1})) if isinstance(schema_id, int)
            else glue(avro({"id": 1})))
    if fmt == "protobuf":
        good = confluent(1, b"\x00\x08\x01")
    staging = Staging(str(tmp_path / "staging"))
    reader = FetchedKafka([raw(0, [good] * 3), raw(3, [good, good, bad, good])],
                          decoder=registry_decoder(monkeypatch, fmt, schemas), staging=staging)
    if direct:
        reader.sink = ParquetSink(staging, reader.split.id, reader.schema, "snappy")
    assert_failed_cleanly(reader, staging,
                          f"trips:0 offset 5: {reason} (format.on_error is fail)")


def test_kinesis_split_fails_on_zlib_garbage(tmp_path: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Glue frames on a Kinesis shard: the error names the shard and sequence number."""
    schemas = {str(GLUE_VERSION): AVRO}
    decoder = registry_decoder(monkeypatch, "avro", schemas)
    good = glue(zlib.compress(avro({"id": 1})), 5)
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)

    def record(seq: str, data: bytes) -> dict[str, Any]:
        return {"SequenceNumber": seq, "Data": data, "PartitionKey": "k",
                "ApproximateArrivalTimestamp": at}

    class Fetched(KinesisSplitReader):
        def fetch(self) -> list[list[dict[str, Any]]]:
            return [[record("101", good)], [record("102", good), record("103", glue(b"\x78"
                                                                                 b"\x9c", 5))]]

    staging = Staging(str(tmp_path / "staging"))
    split = KinesisSplit(1, "trips", "shardId-000000000000", {"TRIM_HORIZON": True}, 0)
    reader = Fetched(split, decoder=decoder, staging=staging, client=object())
    assert_failed_cleanly(reader, staging, "trips:shardId-000000000000 sequence number 103: "
                          "AWS Glue frame: zlib payload is truncated (format.on_error is fail)")


def test_dead_letter_is_still_the_default(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same records with ``on_error: dead_letter``: the split finishes, one dead letter."""
    decoder = registry_decoder(monkeypatch, "avro", {1: AVRO})
    decoder.on_error = "dead_letter"
    staging = Staging(str(tmp_path / "staging"))
    reader = FetchedKafka([raw(0, [confluent(1, avro({"id": 1})), b"\x00\x00\x01"])],
                          decoder=decoder, staging=staging)
    rows = [r for b in reader.batches() for r in b.column("id").to_pylist()]
    assert rows == [1] and staging.dead_letter_rows() == 1
    assert staging.summaries()[3].dead_letters == 1
    assert pa.Table.from_batches(reader._dead).column("offset").to_pylist() == [1]
