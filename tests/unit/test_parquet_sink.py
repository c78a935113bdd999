"""The direct write path's sink (reading.sink) on the shared reader loop: a split's file
appears under ``data/`` whole, under its split's name, before the summary; a failed attempt
leaves nothing there, a retry replaces the file. (With Spark: tests/integration/
test_direct_write.py.)"""
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from streamslice.errors import SourceError
from streamslice.kafka.split import KafkaSplit
from streamslice.reading.decode import Decoder
from streamslice.reading.loop import SplitReader
from streamslice.reading.sink import ParquetSink, parquet_codec
from streamslice.reading.staging import Staging

SCHEMA = pa.schema([pa.field("v", pa.int64(), nullable=False),
                    ("t", pa.timestamp("us", tz="UTC"))])


def Split():  # noqa: N802 - any source's split does: the loop only uses the contract
    return KafkaSplit(id=7, topic="t", partition=0, start=0, stop=0)


class Reader(SplitReader):
    dead_letter_schema = pa.schema([("v", pa.int64())])

    def __init__(self, staging, rows=3, fail_at=None):
        super().__init__(Split(), decoder=Decoder(), staging=staging)
        self.rows, self.fail_at = rows, fail_at

    def fetch(self):
        for i in range(self.rows):
            if i == self.fail_at:
                raise SourceError("broken")
            yield [i]

    def positions(self, raw):
        return raw

    def to_arrow(self, raw):
        return pa.RecordBatch.from_arrays([pa.array(raw, pa.int64()),
                                           pa.array(raw, pa.int64()).cast(SCHEMA[1].type)],
                                          schema=SCHEMA)


def files(staging, sub):
    selector = pafs.FileSelector(f"{staging.root}/{sub}", allow_not_found=True)
    return sorted(i.base_name for i in staging.fs.get_file_info(selector))


def read(staging, constants=None, keep_empty=False, **kwargs):
    reader = Reader(staging, **kwargs)
    reader.sink = ParquetSink(staging, 7, SCHEMA, "zstd", constants=constants,
                              keep_empty=keep_empty)
    return list(reader.batches())


def test_codecs_map_from_sparks_names_or_stay_with_spark():
    assert parquet_codec("parquet", "SNAPPY") == "snappy"
    assert parquet_codec("parquet", "uncompressed") == "none"
    assert parquet_codec("parquet", "lz4_raw") == "lz4_raw"
    assert parquet_codec("parquet", "lz4") is None  # Hadoop-framed in Spark
    assert parquet_codec("parquet", "lzo") is None
    assert parquet_codec("json", "gzip") is None and parquet_codec("orc", "zstd") is None


def test_the_split_file_is_whole_and_in_place_before_the_summary(tmp_path, monkeypatch):
    staging = Staging(str(tmp_path))
    finish, seen = staging.finish_split, []

    def finish_split(*args):
        seen.append(files(staging, "data"))
        finish(*args)
    monkeypatch.setattr(staging, "finish_split", finish_split)
    assert read(staging, constants={"streamslice_partition": "batch=00000001"}) == []
    assert seen == [["part-00007.parquet"]]
    assert files(staging, "data") == ["part-00007.parquet"]
    assert files(staging, "_summary") == ["split-00007.json"]
    assert files(staging, "_tmp") == []
    f = pq.ParquetFile(staging.data_file(7))
    assert f.metadata.num_row_groups == 1 and f.metadata.row_group(0).column(0).compression \
        == "ZSTD"
    assert f.schema_arrow == SCHEMA.append(pa.field("streamslice_partition", pa.string(),
                                                    nullable=False))
    assert f.read().column("v").to_pylist() == [0, 1, 2]
    assert b"ARROW:schema" not in (f.metadata.metadata or {})  # as Spark writes it


def test_a_failed_attempt_leaves_nothing_and_a_retry_replaces_the_file(tmp_path):
    staging = Staging(str(tmp_path))
    read(staging)
    with pytest.raises(SourceError):
        read(staging, rows=5, fail_at=4)
    assert files(staging, "_tmp") == []
    assert pq.read_table(staging.data_file(7)).num_rows == 3  # the earlier attempt's, whole
    read(staging, rows=5)
    assert files(staging, "data") == ["part-00007.parquet"]
    assert pq.read_table(staging.data_file(7)).num_rows == 5


def test_a_split_without_records_writes_no_file_unless_it_keeps_the_schema(tmp_path):
    staging = Staging(str(tmp_path))
    read(staging)
    read(staging, rows=0)  # a retry that kept nothing removes what an earlier one moved in
    assert files(staging, "data") == [] and files(staging, "_summary") == ["split-00007.json"]
    read(staging, rows=0, keep_empty=True)
    f = pq.ParquetFile(staging.data_file(7))
    assert f.metadata.num_rows == 0 and f.schema_arrow.names == ["v", "t"]


def test_a_batch_that_is_not_the_declared_schema_fails_instead_of_being_cast(tmp_path):
    staging = Staging(str(tmp_path))
    sink = ParquetSink(staging, 7, pa.schema([("v", pa.string())]), "snappy")
    with pytest.raises(ValueError, match="split 7: a batch's schema"):
        sink.write(pa.RecordBatch.from_pydict({"v": pa.array([1], pa.int64())}))
