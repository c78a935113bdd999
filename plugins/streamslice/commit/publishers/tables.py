"""What the table publishers (Iceberg, Delta) share: the table schema a plan implies, and the
properties every commit records so anyone can audit what it holds."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from ...errors import CommitError
from ...formats.types import spark_type
from ...reading.decode import Decoder
from ...sources import source_class
from ..manifest import Manifest, plan_id
from . import PARTITION_COLUMN, OutputSettings
from .transforms import parse_partition_by

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...config.fields import Fields
    from ...planning.plan import ReadPlan
    from ..manifest import Publishable
    from . import Published

PREFIX = "streamslice."


@dataclass(frozen=True)
class TableSettings(OutputSettings):
    """The ``output:`` keys every table publisher takes."""

    keys: ClassVar[dict[str, str]] = {
        "table": "is only used with format iceberg or delta",
        "partition_by": "is for format iceberg (a partition spec with a time transform) or "
                        "delta (a partition column of it); folders take partition_path"}
    table: str | None = None  # iceberg: namespace.table; delta: the table's URI
    partition_by: str | None = None  # "day(event_time)": a time transform (transforms.py)

    @staticmethod
    def parse_partition_by(f: Fields) -> str | None:
        """``hour(col)``, ``day(col)``, ``month(col)`` or ``year(col)``: Iceberg's time
        transforms of a timestamp column of the records (checked against the records' schema
        at plan time); a Delta table is partitioned by a column of the transform's values."""
        value = f.str("partition_by", None)
        if value is None:
            return None
        try:
            parse_partition_by(value)
        except ValueError as exc:
            raise f.error(str(exc), "partition_by") from None
        return value


def table_schema(plan: ReadPlan[Any]) -> pa.Schema:
    """The records' schema (from the pipeline's format, so it is stable across runs) plus the
    partition column."""
    schema = source_class(plan.source).readers().record_schema(Decoder.from_dict(plan.decode), plan)
    return schema.append(pa.field(PARTITION_COLUMN, pa.string(), nullable=False))


def commit_properties(plan: ReadPlan[Any], manifest: Publishable) -> dict[str, str]:
    """Pipeline, run, plan id, the end position of every split, and the manifest itself."""
    ends = {s.key: s.end for s in plan.splits}
    ends.update({k: v for k, v in plan.next_positions.items()})
    slim = {k: v for k, v in manifest.to_dict().items() if k != "plan"}
    return {f"{PREFIX}pipeline": plan.pipeline, f"{PREFIX}run_id": str(manifest.run_id),
            f"{PREFIX}plan_id": plan_id(plan), f"{PREFIX}partition": plan.partition,
            f"{PREFIX}end_positions": json.dumps(ends, sort_keys=True, default=str),
            f"{PREFIX}manifest": json.dumps(slim, sort_keys=True, default=str)}


def commits_plan(properties: Mapping[str, object], plan: ReadPlan[Any]) -> bool:
    """Whether a commit published ``plan`` (``properties``: a snapshot's summary or a Delta
    commit's history entry, as the table keeps it)."""
    return properties.get(f"{PREFIX}plan_id") == plan_id(plan)


def manifest_from(properties: Mapping[str, object], published: Published) -> Manifest:
    """The manifest a commit of a plan (``commits_plan``) recorded, with where it landed."""
    data = json.loads(str(properties[f"{PREFIX}manifest"]))
    return Manifest.from_dict({**data, "published": published})


def check_compatible(existing: pa.Schema, wanted: pa.Schema, table: str,
                     widen: bool = True) -> None:
    """Refuse, naming each field, a reader schema the table cannot take (``schema_changes``)."""
    problems = schema_changes(existing, wanted, widen=widen)
    if problems:
        raise CommitError(f"incompatible schema change for table {table}: "
                          f"{'; '.join(problems[:5])}"
                          f"{f' (and {len(problems) - 5} more)' if len(problems) > 5 else ''};"
                          " nothing was published: write to a new table or migrate this one")


def schema_changes(existing: pa.Schema | pa.StructType, wanted: pa.Schema | pa.StructType,
                   prefix: str = "", widen: bool = True) -> list[str]:
    """What keeps ``wanted`` from evolving a table of schema ``existing``, per field path.

    Fine: a new nullable field, at any depth (the table adds it; older rows read null); a
    field no longer declared (the table keeps it; new rows read null); values that fit the
    column (tinyint into int, as Iceberg stores it); a widened type (int to bigint, float to
    double, a decimal's precision at the same scale: where the table format can widen a
    column, ``widen``: Iceberg, not delta-rs, which keeps the column's type and fails on the
    first value beyond it); types that differ only in how Arrow holds them. Anything else is
    a change the rows already in the table cannot follow."""
    have = {f.name: f for f in existing}
    problems = []
    for field in wanted:
        path = f"{prefix}{field.name}"
        old = have.get(field.name)
        if old is None:
            if not field.nullable:
                problems.append(f"new field '{path}' is NOT NULL, but the rows already in the "
                                "table have no value for it")
            continue
        problems += _type_changes(old.type, field.type, path, widen)
    return problems


def _type_changes(have: pa.DataType, want: pa.DataType, path: str,
                  widen: bool) -> list[str]:
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        return schema_changes(have, want, f"{path}.", widen)
    if _is_list(have) and _is_list(want):
        return _type_changes(have.value_type, want.value_type, f"{path}[]", widen)
    if pa.types.is_map(have) and pa.types.is_map(want):
        return (_type_changes(have.key_type, want.key_type, f"{path}.key", widen)
                + _type_changes(have.item_type, want.item_type, f"{path}.value",
                                widen))
    old, new = spark_type(have), spark_type(want)
    if old == new or _widens(have, want, widen):
        return []
    return [f"field '{path}' is {old} in the table, {new} now"]


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _widens(have: pa.DataType, want: pa.DataType, widen: bool) -> bool:
    """``want`` values fit a ``have`` column (Iceberg keeps tinyint and smallint as int), or
    the column widens to them (Iceberg's type promotions, if ``widen``)."""
    if pa.types.is_integer(have) and pa.types.is_integer(want):
        return have.bit_width >= want.bit_width or \
            (widen and (have.bit_width, want.bit_width) == (32, 64))
    if pa.types.is_floating(have) and pa.types.is_floating(want):
        return have.bit_width >= want.bit_width or widen
    if pa.types.is_decimal(have) and pa.types.is_decimal(want):
        return widen and have.scale == want.scale and want.precision >= have.precision
    return False
