"""The staging area of one run attempt, and what readers leave there besides records.

``<dataset>/_staging/<partition>/<attempt>/``
  ``data/``                      records: ``part-N.parquet`` per split, moved in by the reader
                                 (``reading.sink``), or files Spark's own committer wrote
  ``_dead_letter/split-N.dlq``     records that failed to decode, written by the reader: Parquet
                                 named so that no ``**/*.parquet`` glob takes them for data
  ``_summary/split-N.json``        what the reader saw for split N, written when it finishes
  ``_tmp/``                        data files being written, moved to ``data/`` when complete

Reader files are named by split, so a retried Spark task overwrites its own files: a split has
one summary and one dead-letter file whatever the number of attempts. Directories starting with
``_`` are ignored by Spark and Hive readers of the dataset.
"""
from __future__ import annotations

import functools
import json
import uuid
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..aws.storage import filesystem, governs
from .stats import SplitSummary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..aws import AwsAuth

DATA, DEAD_LETTER, SUMMARY, TMP = "data", "_dead_letter", "_summary", "_tmp"
DLQ = "dlq"  # the dead letters' extension: Parquet files, kept out of a reader's *.parquet glob


def split_file(split_id: int, ext: str) -> str:
    return f"split-{split_id:05d}.{ext}"


class Staging:
    """``auth``: the output's AWS identity (``OutputTarget.auth``), for staging on S3."""

    def __init__(self, uri: str, auth: AwsAuth | None = None) -> None:
        self.uri, self.auth = uri.rstrip("/"), auth

    @functools.cached_property
    def root(self) -> str:
        """The area's path on ``fs`` (found when first used: naming an area on S3 asks for
        nothing, resolving its file system asks S3 for the bucket's region)."""
        return filesystem(self.uri, self.auth)[1]

    @property
    def fs(self) -> pafs.FileSystem:
        """The file system, with the credentials of the moment (``aws.storage``)."""
        return filesystem(self.uri, self.auth)[0]

    @property
    def renews_credentials(self) -> bool:
        """Whether the file system's credentials are renewed (an assumed role on S3): a
        file written over a long time is then written locally and copied in at the end."""
        return bool(self.auth and self.auth.role_arn and governs(self.uri, self.auth))

    @property
    def data_uri(self) -> str:
        return f"{self.uri}/{DATA}"

    def data_file(self, split_id: int) -> str:
        """Where the direct write path puts split ``split_id``'s records."""
        return self._path(DATA, f"part-{split_id:05d}.parquet")

    def clear_data(self) -> None:
        """An empty ``data/`` (what an earlier job in this area left is gone, as Spark's
        ``mode("overwrite")`` does) and no files half written."""
        for sub in (DATA, TMP):
            self.fs.delete_dir_contents(self._path(sub), missing_dir_ok=True)
        self.fs.create_dir(self._path(DATA), recursive=True)

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _write_atomic(self, path: str, write: Callable[[str], None]) -> None:
        self.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        write(tmp)
        self.fs.move(tmp, path)

    def write_summary(self, split_id: int, summary: SplitSummary) -> None:
        body = json.dumps(summary.to_dict(), sort_keys=True).encode()

        def write(tmp: str) -> None:
            with self.fs.open_output_stream(tmp) as out:
                out.write(body)
        self._write_atomic(self._path(SUMMARY, split_file(split_id, "json")), write)

    def write_dead_letters(self, split_id: int, table: pa.Table | None) -> None:
        path = self._path(DEAD_LETTER, split_file(split_id, DLQ))
        if table is None or table.num_rows == 0:
            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                self.fs.delete_file(path)
            return
        self._write_atomic(path, lambda tmp: pq.write_table(table, tmp, filesystem=self.fs))

    def finish_split(self, split_id: int, dead_batches: list[pa.RecordBatch],
                     dead_schema: pa.Schema, summary: SplitSummary) -> None:
        """What a reader leaves when its split is done: dead letters, then the summary."""
        table = pa.Table.from_batches(dead_batches, dead_schema) if dead_batches else None
        self.write_dead_letters(split_id, table)
        self.write_summary(split_id, summary)

    def summaries(self) -> dict[int, SplitSummary]:
        out = {}
        for info in self._list(SUMMARY):
            if info.base_name.endswith(".json"):
                with self.fs.open_input_stream(info.path) as f:
                    summary = SplitSummary.from_dict(json.loads(f.read()))
                out[summary.split] = summary
        return out

    def dead_letter_rows(self) -> int:
        files = [i.path for i in self._list(DEAD_LETTER) if i.base_name.endswith(f".{DLQ}")]
        return sum(pq.read_metadata(p, filesystem=self.fs).num_rows for p in files)

    def dead_letter_reasons(self, limit: int = 3) -> list[str]:
        """The first ``limit`` dead letters' reasons, by split."""
        reasons: list[str] = []
        files = sorted(i.path for i in self._list(DEAD_LETTER)
                       if i.base_name.endswith(f".{DLQ}"))
        for path in files:
            if len(reasons) >= limit:
                break
            table = pq.read_table(path, filesystem=self.fs, columns=["error"])
            reasons += table.column("error").to_pylist()[:limit - len(reasons)]
        return reasons

    def _list(self, sub: str) -> list[pafs.FileInfo]:
        sel = pafs.FileSelector(self._path(sub), allow_not_found=True)
        found: list[pafs.FileInfo] = self.fs.get_file_info(sel)
        return found
