"""What the table publishers (Iceberg, Delta) share: the table schema a plan implies, and the
properties every commit records so anyone can audit what it holds."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ...reading.decode import Decoder
from ...sources import source_class
from ..manifest import plan_id
from . import PARTITION_COLUMN

if TYPE_CHECKING:
    from ...planning.plan import ReadPlan

PREFIX = "streamslice."


def table_schema(plan: ReadPlan) -> pa.Schema:
    """The records' schema (from the pipeline's format, so it is stable across runs) plus the
    partition column."""
    schema = source_class(plan.source).record_schema(Decoder.from_dict(plan.decode), plan)
    return schema.append(pa.field(PARTITION_COLUMN, pa.string(), nullable=False))


def commit_properties(plan: ReadPlan, manifest: dict[str, Any]) -> dict[str, str]:
    """Pipeline, run, plan id, the end position of every split, and the manifest itself."""
    ends = {s.key: getattr(s, "stop", None) for s in plan.splits}
    ends.update({k: v for k, v in plan.next_positions.items()})
    slim = {k: v for k, v in manifest.items() if k != "plan"}
    return {f"{PREFIX}pipeline": plan.pipeline, f"{PREFIX}run_id": str(manifest.get("run_id")),
            f"{PREFIX}plan_id": plan_id(plan), f"{PREFIX}partition": plan.partition,
            f"{PREFIX}end_positions": json.dumps(ends, sort_keys=True, default=str),
            f"{PREFIX}manifest": json.dumps(slim, sort_keys=True, default=str)}


def manifest_from(properties: dict[str, Any], plan: ReadPlan) -> dict[str, Any] | None:
    """The manifest a commit recorded, if that commit published ``plan``."""
    if properties.get(f"{PREFIX}plan_id") != plan_id(plan):
        return None
    data: dict[str, Any] = json.loads(properties[f"{PREFIX}manifest"])
    return data
