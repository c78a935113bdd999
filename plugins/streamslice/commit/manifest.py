"""The manifest: ``_manifest.json``, written last into a published partition. It names the
plan that produced the partition (``plan_id``), which is how a retry recognises its own
publish."""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from ..aws.storage import filesystem

if TYPE_CHECKING:
    from ..aws import AwsAuth
    from ..planning.plan import ReadPlan

MANIFEST = "_manifest.json"


def plan_id(plan: ReadPlan) -> str:
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


def build_manifest(plan: ReadPlan, figures: dict[str, Any], *, run_id: str | None = None,
                   committed_at: int | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    summaries = figures["summaries"]
    ts = [s for s in summaries if s.get("min_timestamp") is not None]
    manifest = {
        "pipeline": plan.pipeline, "source": plan.source, "mode": plan.mode,
        "partition": plan.partition, "plan_id": plan_id(plan), "run_id": run_id,
        "committed_at": committed_at, "records": figures["records"],
        "dead_letters": figures["dead_letters"],
        "dead_letter_uri": plan.output.dead_letters(plan.partition)
        if plan.output and figures["dead_letters"] else None,
        "late_records": sum(s.get("late", 0) for s in summaries),
        "min_timestamp": min((s["min_timestamp"] for s in ts), default=None),
        "max_timestamp": max((s["max_timestamp"] for s in ts), default=None),
        "interval": plan.interval.__dict__ if plan.interval else None,
        "batch": plan.batch, "gaps": plan.gaps, "splits": summaries,
        "plan": plan.to_dict(),
    }
    if plan.interval and plan.interval.event_time:  # flagged like late ones, the other way
        manifest["early_records"] = sum(s.get("early", 0) for s in summaries)
    manifest.update(extra or {})
    return manifest


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return json.dumps(manifest, indent=1, sort_keys=True).encode()


def read_manifest(dataset_uri: str, partition: str,
                  auth: AwsAuth | None = None) -> dict[str, Any] | None:
    fs, root = filesystem(dataset_uri.rstrip("/"), auth)
    path = f"{root}/{partition}/{MANIFEST}"
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as f:
        data: dict[str, Any] = json.loads(f.read())
        return data
