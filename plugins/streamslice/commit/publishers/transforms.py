"""``output.partition_by``: an Iceberg table partitioned by a time transform of a record column
(``day(event_time)``, ``hour(timestamp)``), so a filter on that column prunes partitions in
every engine that reads Iceberg (Spark, Trino, Athena, DuckDB, pyiceberg), as Iceberg's hidden
partitioning promises. The names are Iceberg's transforms (Spark's DDL says ``days(…)``)."""
from __future__ import annotations

import re

import pyarrow as pa

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


def check_column(text: str, schema: pa.Schema) -> None:
    """The transform's column is a top-level timestamp or date column of the records."""
    _, column = parse_partition_by(text)
    if column not in schema.names:
        raise ConfigError(f"output.partition_by: {text!r}: the records have no top-level column "
                          f"{column!r} (columns: {', '.join(schema.names)})")
    typ = schema.field(column).type
    if not (pa.types.is_timestamp(typ) or pa.types.is_date(typ)):
        raise ConfigError(f"output.partition_by: {text!r}: column {column!r} is {typ}; a time "
                          "transform takes a timestamp or date column")


def iceberg_transform(name: str):  # type: ignore[no-untyped-def]
    from pyiceberg.transforms import DayTransform, HourTransform, MonthTransform, YearTransform
    return {"hour": HourTransform, "day": DayTransform, "month": MonthTransform,
            "year": YearTransform}[name]()
