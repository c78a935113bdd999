"""``output.partition_by``: a table partitioned by a time transform of a record column
(``day(event_time)``, ``hour(timestamp)``). Iceberg partitions by the transform itself, so a
filter on that column prunes partitions in every engine that reads Iceberg (Spark, Trino,
Athena, DuckDB, pyiceberg), as Iceberg's hidden partitioning promises. Delta has no hidden
transforms: the table gets a partition column ``<column>_<transform>`` holding the transform's
value in UTC (``delta_partition_column``), which a filter names. The names are Iceberg's
transforms (Spark's DDL says ``days(…)``)."""
from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConfigError

TRANSFORMS = ("hour", "day", "month", "year")
_FORM = re.compile(r"\s*(\w+)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*")


def parse_partition_by(text: str) -> tuple[str, str]:
    """``"day(event_time)"`` → ``("day", "event_time")``, or ValueError saying the forms."""
    m = _FORM.fullmatch(text)
    if not m or m.group(1).rstrip("s") not in TRANSFORMS:
        raise ValueError(f"{text!r} is not a time transform of a column: "
                         f"{', '.join(t + '(column)' for t in TRANSFORMS)}")
    return m.group(1).rstrip("s"), m.group(2)


def check_column(text: str, schema: pa.Schema, delta: bool = False) -> None:
    """The transform's column is a top-level timestamp or date column of the records; on Delta
    the partition column it adds is not one of theirs."""
    _, column = parse_partition_by(text)
    if column not in schema.names:
        raise ConfigError(f"output.partition_by: {text!r}: the records have no top-level column "
                          f"{column!r} (columns: {', '.join(schema.names)})")
    typ = schema.field(column).type
    if not (pa.types.is_timestamp(typ) or pa.types.is_date(typ)):
        raise ConfigError(f"output.partition_by: {text!r}: column {column!r} is {typ}; a time "
                          "transform takes a timestamp or date column")
    added = delta_partition_field(text).name
    if delta and added.lower() in (n.lower() for n in schema.names):
        raise ConfigError(f"output.partition_by: {text!r}: the Delta table's partition column "
                          f"{added!r} would be a second column of that name beside the "
                          "records' own: rename the record field or partition by another "
                          "transform")


def iceberg_transform(name: str):  # type: ignore[no-untyped-def]
    from pyiceberg.transforms import DayTransform, HourTransform, MonthTransform, YearTransform
    return {"hour": HourTransform, "day": DayTransform, "month": MonthTransform,
            "year": YearTransform}[name]()


def delta_partition_field(text: str) -> pa.Field:
    """The Delta partition column ``output.partition_by`` stands for: ``event_time_day`` a DATE,
    ``event_time_hour`` the text ``2024-05-01-01``, ``event_time_month`` ``2024-05`` (Iceberg's
    own partition texts: they sort in time order, and DuckDB prunes on them, where it does not
    on a TIMESTAMP partition), ``event_time_year`` the year as an INT."""
    name, column = parse_partition_by(text)
    typ = {"day": pa.date32(), "year": pa.int32()}.get(name, pa.string())
    return pa.field(f"{column}_{name}", typ)


def delta_partition_values(text: str, values: pa.Array | pa.ChunkedArray
                           ) -> pa.Array | pa.ChunkedArray:
    """The partition column's values for a batch's column ``values`` (timestamps or dates),
    by UTC whatever the column's time zone; a null time gives a null partition value."""
    name, _ = parse_partition_by(text)
    if pa.types.is_date(values.type):
        values = values.cast(pa.date32()).cast(pa.timestamp("s"))
    elif values.type.tz is not None:
        values = values.cast(pa.timestamp(values.type.unit))
    if name == "day":
        return values.cast(pa.date32())
    if name == "year":
        return pc.year(values).cast(pa.int32())
    return pc.strftime(values, format="%Y-%m-%d-%H" if name == "hour" else "%Y-%m")
