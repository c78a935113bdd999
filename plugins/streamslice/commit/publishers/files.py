"""Partitions as directories of files (parquet, json, orc), on a file system or object store.

``DirectoryRename`` (file systems): the old partition is set aside in the work area's trash,
the new one renamed in, then the old one removed. Readers see the old or the new, never a mix;
a crash in between leaves the partition absent until the retry re-publishes it. Trash a crash
left behind (the replaced files, Parquet a glob of the output would read) is removed by the
next publish of that partition, by ``finish`` when a retry finds the partition already
published by the try that crashed, and by any later publish once its partition is in place
again (an incremental batch is never published twice, and a failed run may not be retried).

``ObjectStoreCopy`` (S3 and other stores that cannot rename a directory): the files are
copied in under names of their plan (``object_names``) with ``_manifest.json`` last, so the
manifest marks a complete partition. A re-publish of the same plan overwrites the same
objects; another plan's publish first removes the manifest and the old plan's objects.
Readers that do not check the manifest can see a partition half copied, or fewer records
during a replace, never a record twice (old and new files are never there together).

Dead letters go to ``<work>/dead_letter/<partition>/`` before the data, outside the dataset:
only records are under the dataset (see ``OutputTarget.work``).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote, unquote

import pyarrow.fs as pafs

from ...aws.storage import filesystem
from ...errors import CommitError, faults
from ...monitoring.lineage import location_dataset
from ...reading.staging import DATA, DEAD_LETTER
from ..manifest import MANIFEST, Manifest, manifest_bytes, plan_id, read_manifest
from . import OutputSettings

if TYPE_CHECKING:
    from ...config.fields import Fields
    from ...monitoring.lineage import DatasetName
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging
    from ..manifest import Publishable
    from . import Published, TargetFields


class DirectoryRename:
    def __init__(self, output: OutputTarget) -> None:
        self.output = output
        self.fs, self.root = filesystem(output.dataset.rstrip("/"), output.auth)
        self.work = filesystem(output.work, output.auth)[1]

    def uri(self, plan: ReadPlan[Any]) -> str:
        return f"{self.output.dataset.rstrip('/')}/{folder_of(plan)}"

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        return location_dataset(self.output.dataset), None

    def published_manifest(self, plan: ReadPlan[Any]) -> Manifest | None:
        found = read_manifest(self.output.dataset, folder_of(plan), self.output.auth)
        return Manifest.from_dict({**found, "published": {"uri": self.uri(plan)}}) \
            if found else None

    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        fs = staging.fs
        require_staged(staging, manifest.records)
        publish_dead_letters(self.output, plan, staging)
        data = f"{staging.root}/{DATA}"
        if fs.get_file_info(data).type == pafs.FileType.NotFound:
            fs.create_dir(data, recursive=True)  # an empty run still publishes its partition
        with fs.open_output_stream(f"{data}/{MANIFEST}") as out:
            out.write(manifest_bytes(manifest))
        target = f"{self.root}/{folder_of(plan)}"
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        name = trash_name(plan)
        trash_dir = f"{self.work}/trash"
        fs.create_dir(trash_dir, recursive=True)
        self.empty_trash(trash_dir, name)  # what a crash during an earlier publish left
        trash = f"{trash_dir}/{name}-{uuid.uuid4().hex[:8]}"
        if fs.get_file_info(target).type != pafs.FileType.NotFound:
            fs.move(target, trash)
            faults.check("publish_swap")
        fs.move(data, target)
        faults.check("publish_renamed")
        delete_if_there(fs, trash)  # (a concurrent publish's sweep may have done it)
        fs.delete_dir(staging.root)
        return {"uri": self.uri(plan)}

    def finish(self, plan: ReadPlan[Any]) -> None:
        """The clean-up of a publish a crash interrupted after the new partition was in
        place: the partition's trash."""
        self.empty_trash(f"{self.work}/trash", trash_name(plan))

    def empty_trash(self, trash_dir: str, name: str) -> None:
        """``name``'s trash, and the trash of every partition that is in place again (its
        publish got past the rename, so what it replaced is garbage; a partition set aside
        and not yet replaced keeps its trash)."""
        for info in self.fs.get_file_info(pafs.FileSelector(trash_dir, allow_not_found=True)):
            owner = info.base_name.rpartition("-")[0]
            if owner == name or (owner and self.fs.get_file_info(
                    f"{self.root}/{unquote(owner)}/{MANIFEST}").type == pafs.FileType.File):
                delete_if_there(self.fs, info.path)


def delete_if_there(fs: pafs.FileSystem, path: str) -> None:
    """A directory, if it is (still) there."""
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


class ObjectStoreCopy(DirectoryRename):
    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        """Each staged file under its plan's name (``object_names``): a re-publish of the
        same plan overwrites the same objects, so a reader sees its records once throughout.
        Where the names change (another plan), the manifest and every object not named
        again go first, then the new ones are copied in and the manifest last: a reader
        sees the old records or the new, possibly only some of them, never one twice."""
        fs = staging.fs
        require_staged(staging, manifest.records)
        publish_dead_letters(self.output, plan, staging)
        target = f"{self.root}/{folder_of(plan)}"
        sub = f"{staging.root}/{DATA}"
        names = object_names(plan, sub, fs.get_file_info(
            pafs.FileSelector(sub, recursive=True, allow_not_found=True)))
        _remove_other_objects(fs, target, set(names.values()))
        faults.check("publish_copy")  # the old partition gone, the new one not yet copied
        for copied, (path, name) in enumerate(sorted(names.items()), 1):
            fs.copy_file(path, f"{target}/{name}")
            faults.check("publish_copy", records=copied)  # a partition half copied
        with fs.open_output_stream(f"{target}/{MANIFEST}") as out:
            out.write(manifest_bytes(manifest))
        fs.delete_dir(staging.root)
        return {"uri": self.uri(plan)}


def object_names(plan: ReadPlan[Any], root: str, infos: list[pafs.FileInfo]) -> dict[str, str]:
    """Each staged file under ``root`` → its object's name in the partition: in its folder,
    ``part-<plan id>-<n>`` and its extensions, ``n`` its place among the folder's files by
    name (the read job names them by split or Spark task, so the same plan's read gives the
    same names for the same records); a file no reader takes for data (``_*``, ``.*``)
    keeps its name."""
    pid, out = plan_id(plan), {}
    files = sorted(i.path for i in infos if i.type == pafs.FileType.File)
    places: dict[str, int] = {}
    for path in files:
        folder, _, base = path[len(root) + 1:].rpartition("/")
        if base.startswith(("_", ".")):  # not data to any reader (Spark's _SUCCESS)
            out[path] = path[len(root) + 1:]
            continue
        n = places[folder] = places.get(folder, -1) + 1
        ext = base[base.index("."):] if "." in base else ""
        out[path] = f"{folder}/" * bool(folder) + f"part-{pid}-{n:05d}{ext}"
    return out


def _remove_other_objects(fs: pafs.FileSystem, target: str, keep: set[str]) -> None:
    """Before a publish whose names differ from what ``target`` holds: its manifest first
    (the partition is not complete from then on), then each object not in ``keep``."""
    infos = fs.get_file_info(pafs.FileSelector(target, recursive=True, allow_not_found=True))
    held = {i.path[len(target) + 1:] for i in infos if i.type == pafs.FileType.File}
    if held - {MANIFEST} == keep:
        return  # the same plan again: its objects are overwritten in place
    if MANIFEST in held:
        fs.delete_file(f"{target}/{MANIFEST}")
    gone = held - keep - {MANIFEST}
    if gone and gone == held - {MANIFEST}:
        delete_if_there(fs, target)  # all of them (in batches)
    else:
        for name in sorted(gone):
            fs.delete_file(f"{target}/{name}")


@dataclass(frozen=True)
class FilesSettings(OutputSettings):
    """A folder output's own key: the folder an interval lands in."""

    keys: ClassVar[dict[str, str]] = {
        "partition_path": "is for folder outputs (parquet, json, orc); a {format} table is "
                          "partitioned by the table itself"}
    # strftime template of an interval's start: its folder (planning.layout); None: interval=…
    partition_path: str | None = None

    @classmethod
    def parse(cls, f: Fields, fmt: str, path: str) -> FilesSettings:
        return cls(partition_path=f.str("partition_path", None))

    def target(self, dataset: str, pipeline: str) -> TargetFields:
        return {"partition_path": self.partition_path}


class FilesPublisher:
    """Partitions as folders of parquet, json or orc files: renamed into place where the
    file system can (``DirectoryRename``), copied with the manifest last where it cannot
    (``ObjectStoreCopy``)."""

    name: ClassVar[str] = "files"
    settings: ClassVar[type[OutputSettings]] = FilesSettings
    extra: ClassVar[str | None] = None
    stages: ClassVar[str | None] = None  # the output's own format

    def __init__(self, output: OutputTarget) -> None:
        fs, _ = filesystem(output.dataset.rstrip("/"), output.auth)
        self.how = DirectoryRename(output) if fs.type_name == "local" else \
            ObjectStoreCopy(output)

    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        return self.how.publish(plan, staging, manifest)

    def published_manifest(self, plan: ReadPlan[Any]) -> Manifest | None:
        return self.how.published_manifest(plan)

    def finish(self, plan: ReadPlan[Any]) -> None:
        self.how.finish(plan)

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        return self.how.lineage_dataset()


def trash_name(plan: ReadPlan[Any]) -> str:
    """What the trash of the plan's partition is named by: its folder under the dataset
    (``output.partition_path`` may nest it), quoted into one name that ``unquote`` gives
    back, so a sweep finds the folder whose manifest says the partition is in place."""
    return quote(folder_of(plan), safe="=")


def folder_of(plan: ReadPlan[Any]) -> str:
    """The partition's folder under the dataset: its name, or ``output.partition_path``."""
    assert plan.output is not None
    return plan.output.folder(plan.partition, plan.interval)


def publish_dead_letters(output: OutputTarget, plan: ReadPlan[Any], staging: Staging) -> None:
    """Replace the partition's dead letters with the staged ones (copied: the staging area
    stays whole until the data is in place)."""
    fs, dest = staging.fs, filesystem(output.dead_letters(plan.partition), output.auth)[1]
    if fs.get_file_info(dest).type != pafs.FileType.NotFound:
        fs.delete_dir(dest)
    source = f"{staging.root}/{DEAD_LETTER}"
    for info in fs.get_file_info(pafs.FileSelector(source, allow_not_found=True)):
        if info.type == pafs.FileType.File:
            fs.create_dir(dest, recursive=True)
            fs.copy_file(info.path, f"{dest}/{info.base_name}")


def require_staged(staging: Staging, records: int | None) -> None:
    """The staged read is there to publish: a staging area that is gone, or that holds no
    data file while the manifest counts ``records``, is an error, never an empty partition
    published over data (a folder replaced by nothing, a table's rows deleted)."""
    fs = staging.fs
    if fs.get_file_info(staging.root).type == pafs.FileType.NotFound:
        raise CommitError(f"the staged output {staging.uri} is gone; nothing was published. "
                          "Re-run to read the plan again.")
    if records and not any(i.type == pafs.FileType.File for i in fs.get_file_info(
            pafs.FileSelector(f"{staging.root}/{DATA}", recursive=True, allow_not_found=True))):
        raise CommitError(f"the staged output {staging.uri} holds no data, but {records} "
                          "records were verified in it; nothing was published. Re-run to "
                          "read the plan again.")


def staged_files(staging: Staging) -> list[str]:
    """The Parquet files the read job staged (paths on ``staging.fs``)."""
    selector = pafs.FileSelector(f"{staging.root}/{DATA}", recursive=True, allow_not_found=True)
    return sorted(i.path for i in staging.fs.get_file_info(selector)
                  if i.type == pafs.FileType.File and i.base_name.endswith(".parquet"))
