"""What the table publishers (Iceberg, Delta) share: the table schema a plan implies, and the
properties every commit records so anyone can audit what it holds."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ...errors import CommitError
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
    ends = {s.key: s.end for s in plan.splits}
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


_PROMOTIONS = {(pa.int32(), pa.int64()), (pa.float32(), pa.float64())}


def check_compatible(existing: pa.Schema, wanted: pa.Schema, table: str) -> None:
    """Columns both schemas have must keep their type (or widen int → long, float → double);
    new columns are fine (they are added, nullable)."""
    for field in wanted:
        if field.name not in existing.names:
            continue
        have = existing.field(field.name).type
        if have.equals(field.type) or (have, field.type) in _PROMOTIONS:
            continue
        if _loose(have) == _loose(field.type):
            continue
        raise CommitError(f"incompatible schema change for table {table}: column "
                          f"{field.name} is {have} in the table, {field.type} now; write to a "
                          "new table or migrate this one")


def _loose(t: pa.DataType) -> str:
    """Types that differ only in how a format stores them (large_string, string_view, …)."""
    text = str(t)
    for a, b in (("large_", ""), ("_view", ""), ("utf8", "string"), ("large_list", "list")):
        text = text.replace(a, b)
    return text
