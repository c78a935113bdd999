"""The manifest: ``_manifest.json``, written last into a published partition. It names the
plan that produced the partition (``plan_id``), which is how a retry recognises its own
publish.

Manifests stay on disk (and in table commits) for as long as the data does, so the manifest
is a versioned record (``streamslice.records``): one written before versions existed reads as
version 1."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import pyarrow.fs as pafs

from ..aws.storage import filesystem
from ..planning.plan import Interval  # noqa: TC001 - msgspec reads the annotation
from ..reading.stats import SplitSummary
from ..records import RecordKind, Versioned, decode
from .publishers import Published  # noqa: TC001 - msgspec reads the annotation

if TYPE_CHECKING:
    from ..aws import AwsAuth
    from ..planning.plan import ReadPlan
    from .verify import Verified

MANIFEST = "_manifest.json"
# Left out of the JSON when None: what only some manifests have (as before versions).
_OPTIONAL = ("early_records", "published", "plan")
# The interval's neighbours are how its plan owned records (``plan`` has them), not what the
# manifest says about the partition: left out, as before plans had them.
_NEIGHBOURS = ("previous_start", "next_end")


class Publishable(Protocol):
    """What a publisher reads of the manifest it publishes with: the count of records it
    checks the staging area against (None: not counted), the run id its table commit names,
    and what it writes (``to_dict``). A ``Manifest``, or a stream batch's
    ``StreamBatchManifest``."""

    @property
    def run_id(self) -> str | None: ...

    @property
    def records(self) -> int | None: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class StreamBatchManifest:
    """What a ``foreachBatch`` micro-batch knows when it publishes (``spark.stream_publish``):
    its run id. Its records are not counted (that would read the micro-batch from the source
    a second time) and nothing verifies them against a plan's splits, so it is no
    ``Manifest``; the table commit records it as ``{"run_id": …}``, as it always has."""

    run_id: str | None
    records: None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id}


@dataclass
class Manifest(Versioned):
    KIND: ClassVar[RecordKind] = RecordKind("manifest", 1)

    pipeline: str
    source: str
    mode: str
    partition: str
    plan_id: str
    run_id: str | None
    committed_at: int | None  # epoch ms
    records: int
    dead_letters: int
    dead_letter_uri: str | None
    late_records: int
    min_timestamp: int | None
    max_timestamp: int | None
    interval: Interval | None
    batch: int | None
    gaps: list[dict[str, Any]]  # ranges on_data_loss: skip passed over
    splits: list[SplitSummary]
    plan: dict[str, Any] | None = None  # the whole plan (a table commit keeps it apart)
    early_records: int | None = None  # with an event-time field only
    # Where the publish landed (the partition's URI, a table's snapshot or version): known
    # to the commit, not written into the manifest itself.
    published: Published | None = None
    version: int = 1

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["splits"] = [s.to_dict() for s in self.splits]
        if data.get("interval") is not None:
            data["interval"] = {k: v for k, v in data["interval"].items()
                                if not (k in _NEIGHBOURS and v is None)}
        return {k: v for k, v in data.items() if not (k in _OPTIONAL and v is None)}

    @classmethod
    def from_dict(cls, data: Any) -> Manifest:
        if isinstance(data, dict) and isinstance(data.get("splits"), list):
            data = {**data, "splits": [SplitSummary.from_dict(s) for s in data["splits"]]}
        return decode(cls, data)


def plan_id(plan: ReadPlan[Any]) -> str:
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


def build_manifest(plan: ReadPlan[Any], figures: Verified, *, run_id: str | None = None,
                   committed_at: int | None = None) -> Manifest:
    summaries = figures.summaries
    ts = [s for s in summaries if s.min_timestamp is not None]
    return Manifest(
        pipeline=plan.pipeline, source=plan.source, mode=plan.mode, partition=plan.partition,
        plan_id=plan_id(plan), run_id=run_id, committed_at=committed_at,
        records=figures.records, dead_letters=figures.dead_letters,
        dead_letter_uri=plan.output.dead_letters(plan.partition)
        if plan.output and figures.dead_letters else None,
        late_records=sum(s.late for s in summaries),
        min_timestamp=min((s.min_timestamp for s in ts if s.min_timestamp is not None),
                          default=None),
        max_timestamp=max((s.max_timestamp for s in ts if s.max_timestamp is not None),
                          default=None),
        interval=replace(plan.interval, previous_start=None, next_end=None)
        if plan.interval else None, batch=plan.batch, splits=summaries,
        gaps=[g.to_dict() for g in plan.gaps],
        plan=plan.to_dict(),
        # flagged like late ones, the other way
        early_records=sum(s.early or 0 for s in summaries)
        if plan.interval and plan.interval.event_time else None)


def manifest_bytes(manifest: Publishable) -> bytes:
    return json.dumps(manifest.to_dict(), indent=1, sort_keys=True).encode()


def read_manifest(dataset_uri: str, partition: str,
                  auth: AwsAuth | None = None) -> dict[str, Any] | None:
    """A published partition's ``_manifest.json`` as written (``Manifest.from_dict`` reads
    it), or None when there is none."""
    fs, root = filesystem(dataset_uri.rstrip("/"), auth)
    path = f"{root}/{partition}/{MANIFEST}"
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as f:
        data: dict[str, Any] = json.loads(f.read())
        return data
