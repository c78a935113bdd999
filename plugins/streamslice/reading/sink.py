"""The direct write path: a split reader's records go straight into one Parquet file in the
staging area (pyarrow, streamed), instead of crossing to Spark's JVM to be written there.

The file is written under ``_tmp/`` with a name of its own and moved to
``data/part-<split>.parquet`` once the split is read, before its summary is written. A task
attempt that fails or is killed leaves nothing under ``data/`` (its temporary file is outside
it, and not named ``*.parquet``), and a retried or speculative attempt replaces the split's
file instead of adding a second one. The file holds what Spark's writer would write: the same
columns and nullability (a constant column is required, as Spark writes ``lit``), timestamps
as INT64 microseconds adjusted to UTC, no Arrow schema in the footer, the plan's codec.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..commit.publishers import staged_format
from .staging import TMP

if TYPE_CHECKING:
    from ..planning.plan import ReadPlan
    from .staging import Staging

# Spark's Parquet ``compression`` names → pyarrow's. Spark's others stay with Spark's writer:
# lzo (pyarrow has none) and lz4 (Hadoop-framed in Spark; pyarrow writes LZ4_RAW).
CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip",
          "zstd": "zstd", "brotli": "brotli", "lz4_raw": "lz4_raw"}
LEVELS = {"gzip": 6, "zstd": 3}  # parquet-mr's defaults, which Spark writes with
ROW_GROUP_BYTES = 64 << 20  # Arrow bytes buffered per row group


def parquet_codec(file_format: str, compression: str) -> str | None:
    """pyarrow's codec for staging ``file_format`` with Spark's ``compression``, or None when
    Spark must write it (json, orc, codecs pyarrow lacks)."""
    return CODECS.get(compression.lower()) if file_format == "parquet" else None


def staged_file(plan: ReadPlan[Any]) -> tuple[str, str]:
    """The file format and Spark compression the read job stages the plan's records in."""
    if plan.output is None:
        return "parquet", "snappy"
    return staged_format(plan.output), plan.output.compression


def direct_codec(plan: ReadPlan[Any]) -> str | None:
    """The codec the readers write the plan's staged Parquet in themselves (the job's direct
    write path), or None where Spark writes the staged output (another format or codec)."""
    return parquet_codec(*staged_file(plan))


class ParquetSink:
    """One split's records → ``data/part-<split>.parquet``: ``write`` each batch, then
    ``commit`` (or ``abort``)."""

    def __init__(self, staging: Staging, split_id: int, schema: pa.Schema, codec: str, *,
                 constants: dict[str, str] | None = None, keep_empty: bool = False) -> None:
        self.staging, self.split_id, self.codec = staging, split_id, codec
        self.constants = constants or {}  # string columns with one value (the table partition)
        self.records = schema
        self.schema = pa.schema([*schema, *(pa.field(name, pa.string(), nullable=False)
                                            for name in self.constants)])
        self.keep_empty = keep_empty  # write a file without rows (it carries the schema)
        self._writer: pq.ParquetWriter | None = None
        self._tmp = ""
        self._pending: list[pa.RecordBatch] = []
        self._bytes = 0
        self._local = staging.renews_credentials

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.schema.equals(self.records):  # Spark checks this of the batches it gets
            raise ValueError(f"split {self.split_id}: a batch's schema {batch.schema} is not "
                             f"the declared {self.records}")
        if self._writer is None:
            self._open()
        self._pending.append(batch)
        self._bytes += batch.nbytes
        if self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def commit(self) -> None:
        """Close the file and move it in as the split's; without records (and not
        ``keep_empty``) remove the file an earlier attempt may have moved in instead."""
        fs, target = self.staging.fs, self.staging.data_file(self.split_id)
        if self._writer is None and not self.keep_empty:
            if fs.get_file_info(target).type != pafs.FileType.NotFound:
                fs.delete_file(target)
            return
        if self._writer is None:
            self._open()
        assert self._writer is not None
        self._flush()
        self._writer.close()
        self._writer = None
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        if self._local:  # one upload now, with the credentials of now; S3 shows it whole
            pafs.copy_files(self._tmp, target, source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=fs)
            os.unlink(self._tmp)
            return
        fs.move(self._tmp, target)

    def abort(self) -> None:
        """Drop what was written (a kill instead leaves it in ``_tmp/``, which nothing
        reads)."""
        try:
            if self._writer is not None:
                self._writer.close()
            if self._tmp and self._local:
                os.unlink(self._tmp)
            elif self._tmp:
                self.staging.fs.delete_file(self._tmp)
        except Exception:  # noqa: BLE001 - best effort: the error being raised matters more
            pass
        self._writer, self._pending = None, []

    def _open(self) -> None:
        fs, root = self.staging.fs, self.staging.root
        if self._local:
            # Credentials that are renewed (an assumed role) cannot be swapped into an
            # upload under way: a split read for longer than they last would fail its last
            # parts. So the file is written here and uploaded once, at the end.
            fd, self._tmp = tempfile.mkstemp(prefix=f"streamslice-part-{self.split_id:05d}-",
                                             suffix=".tmp")
            os.close(fd)
            fs = pafs.LocalFileSystem()
        else:
            fs.create_dir(f"{root}/{TMP}", recursive=True)
            self._tmp = f"{root}/{TMP}/part-{self.split_id:05d}.{uuid.uuid4().hex}.tmp"
        self._writer = pq.ParquetWriter(self._tmp, self.schema, filesystem=fs,
                                        compression=self.codec,
                                        compression_level=LEVELS.get(self.codec),
                                        store_schema=False)  # as Spark: no ARROW:schema

    def _flush(self) -> None:
        """The buffered batches as one row group."""
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending)
        n = table.num_rows
        columns = table.columns + [pa.repeat(pa.scalar(value, pa.string()), n)
                                   for value in self.constants.values()]
        assert self._writer is not None
        self._writer.write_table(pa.Table.from_arrays(columns, schema=self.schema),
                                 row_group_size=n)
        self._pending, self._bytes = [], 0
