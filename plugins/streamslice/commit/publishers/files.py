"""Partitions as directories of files (parquet, json, orc), on a file system or object store.

``DirectoryRename`` (file systems): the old partition is set aside, the new one renamed in,
then the old one removed. Readers see the old or the new, never a mix; a crash in between
leaves the partition absent until the retry re-publishes it.

``ObjectStoreCopy`` (S3 and other stores that cannot rename a directory): the old partition
is removed and the new files copied in with ``_manifest.json`` last, so the manifest marks a
complete partition; readers that do not check it can see a partition half copied.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from ...reading.staging import DATA, DEAD_LETTER
from ..manifest import MANIFEST, manifest_bytes, read_manifest

if TYPE_CHECKING:
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging


class DirectoryRename:
    def __init__(self, output: OutputTarget) -> None:
        self.output = output
        self.fs, self.root = pafs.FileSystem.from_uri(output.dataset.rstrip("/"))

    def uri(self, plan: ReadPlan) -> str:
        return f"{self.output.dataset.rstrip('/')}/{plan.partition}"

    def published_manifest(self, plan: ReadPlan) -> dict[str, Any] | None:
        return read_manifest(self.output.dataset, plan.partition)

    def publish(self, plan: ReadPlan, staging: Staging, manifest: dict[str, Any]) -> str:
        fs = staging.fs
        data, dead = f"{staging.root}/{DATA}", f"{staging.root}/{DEAD_LETTER}"
        if fs.get_file_info(data).type == pafs.FileType.NotFound:
            fs.create_dir(data, recursive=True)  # an empty run still publishes its partition
        if fs.get_file_info(dead).type == pafs.FileType.Directory:
            fs.move(dead, f"{data}/{DEAD_LETTER}")
        with fs.open_output_stream(f"{data}/{MANIFEST}") as out:
            out.write(manifest_bytes(manifest))
        target = f"{self.root}/{plan.partition}"
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        trash = f"{self.root}/_trash/{plan.partition.replace('/', '_')}-{uuid.uuid4().hex[:8]}"
        if fs.get_file_info(target).type != pafs.FileType.NotFound:
            fs.create_dir(f"{self.root}/_trash", recursive=True)
            fs.move(target, trash)
        fs.move(data, target)
        if fs.get_file_info(trash).type != pafs.FileType.NotFound:
            fs.delete_dir(trash)
        fs.delete_dir(staging.root)
        return self.uri(plan)


class ObjectStoreCopy(DirectoryRename):
    def publish(self, plan: ReadPlan, staging: Staging, manifest: dict[str, Any]) -> str:
        fs = staging.fs
        target = f"{self.root}/{plan.partition}"
        if fs.get_file_info(target).type != pafs.FileType.NotFound:
            fs.delete_dir(target)
        for sub, dest in ((f"{staging.root}/{DATA}", target),
                          (f"{staging.root}/{DEAD_LETTER}", f"{target}/{DEAD_LETTER}")):
            selector = pafs.FileSelector(sub, recursive=True, allow_not_found=True)
            for info in fs.get_file_info(selector):
                if info.type == pafs.FileType.File:
                    fs.copy_file(info.path, dest + info.path[len(sub):])
        with fs.open_output_stream(f"{target}/{MANIFEST}") as out:
            out.write(manifest_bytes(manifest))
        fs.delete_dir(staging.root)
        return self.uri(plan)


def FilesPublisher(output: OutputTarget) -> DirectoryRename:
    """Rename where the file system can, copy with the manifest last where it cannot."""
    fs, _ = pafs.FileSystem.from_uri(output.dataset.rstrip("/"))
    return DirectoryRename(output) if fs.type_name == "local" else ObjectStoreCopy(output)
