"""Turn a configured source + run context into a ReadPlan (the driver side, before Spark)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..commit.publishers.transforms import check_column
from ..errors import ConfigError
from ..reading.decode import Decoder
from ..schema_registry.base import split_properties
from ..sources import PlanRequest, source_class
from ..timestamps import from_ms
from .layout import PartitionPath
from .plan import Interval, OutputTarget, ReadPlan

if TYPE_CHECKING:
    from ..commit.checkpoint import Checkpoint
    from ..config.pipeline import Decoding
    from ..sources import Mode, Properties, Source
    from .progress import MarkStore


def partition_name(mode: str, interval: Interval | None = None, batch: int | None = None,
                   run_id: str | None = None) -> str:
    """The output partition a run publishes to, relative to the pipeline's dataset."""
    if mode == "interval":
        assert interval is not None
        return "interval=" + from_ms(interval.start).strftime("%Y%m%dT%H%M%SZ")
    if mode == "incremental":
        return f"batch={batch:08d}"
    return "run=" + "".join(c if c.isalnum() or c in "-_." else "_" for c in (run_id or "manual"))


def plan_run(source: Source[Any], *, pipeline: str, mode: Mode, decode: Decoding | None = None,
             output: OutputTarget | None = None, interval: Interval | None = None,
             checkpoint: Checkpoint | None = None, run_id: str | None = None,
             properties: Properties | None = None, now_ms: int | None = None,
             marks: MarkStore | None = None) -> ReadPlan[Any]:
    """Resolve ``source`` into a ReadPlan. ``checkpoint`` is the pipeline's committed state;
    ``marks`` where idle partitions closed earlier intervals (``planning.progress``)."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    props = properties if properties is not None else source.client_properties()
    props, _ = split_properties(props)  # a schema registry's are the formats', not the source's
    planned = source.planner().plan(PlanRequest(mode=mode, properties=props, now_ms=now_ms,
                                      interval=interval, checkpoint=checkpoint,
                                      marks=marks if mode == "interval" else None))
    batch = (checkpoint.batch if checkpoint else 0) + 1 if mode == "incremental" else None
    plan = ReadPlan(
        pipeline=pipeline, source=source.kind, mode=mode, planned_at=now_ms,
        splits=list(planned.splits), partition=partition_name(mode, interval, batch, run_id),
        output=output, run_id=run_id, interval=interval, batch=batch,
        base_checkpoint=checkpoint.to_dict() if checkpoint else None,
        next_positions=planned.next_positions, gaps=planned.gaps,
        decode=decode.prepared(properties).to_dict() if decode else {}, source_info=planned.info)
    check_columns(plan)
    return plan


def check_columns(plan: ReadPlan[Any]) -> None:
    """Each column once: a value's field named like a column the source adds (a JSON field
    ``offset``) would make two, which Spark, Parquet and tables cannot tell apart."""

    readers = source_class(plan.source).readers()
    decoder = Decoder.from_dict(plan.decode)
    schema = readers.record_schema(decoder, plan)
    keys, values = decoder.key_fields(), decoder.value_fields()
    mine = {f.name for f in (*keys, *values)}
    seen: set[str] = set()
    for name in schema.names:
        key = next((f.name for f in keys if f.name.lower() == name.lower()), None)
        value = next((f.name for f in values if f.name.lower() == name.lower()), None)
        if key is not None and value is not None and decoder.flattened("key") and \
                decoder.flattened("value"):
            raise ConfigError(f"format: the key's field {key!r} and the value's field "
                              f"{value!r} would both be top-level columns; set format.flatten: "
                              "false to keep each record in its own struct column (key."
                              f"{key} and value.{value}, as Spark's from_json gives them)")
        if name.lower() in seen:  # Spark resolves names case-insensitively
            # a source's columns follow the record's: a name's first use is the record's
            added = [n for i, n in enumerate(schema.names)
                     if n not in mine or n in schema.names[:i]]
            field = next((n for n in mine if n.lower() == name.lower()), name)
            nested = readers.record_schema(Decoder.from_dict({**plan.decode, "flatten": False}),
                                          plan)
            column = next((f.name for f in nested if pa.types.is_struct(f.type) and
                           f.name not in schema.names and f.type.get_field_index(field) >= 0),
                          "value")
            raise ConfigError(f"format: the record's field {field!r} has the name of a column "
                              f"the {plan.source} source adds ({', '.join(added)}); the "
                              "record's fields become top-level columns: set format.flatten: "
                              f"false to keep them in one struct column ({column}.{field}, as "
                              "Spark's from_json gives it), or leave the field out of the "
                              "schema")
        seen.add(name.lower())
    _check_folder_columns(plan, schema.names)
    if plan.output is not None and plan.output.partition_by:
        check_column(plan.output.partition_by, schema, delta=plan.output.format == "delta")
    if plan.interval is not None and plan.interval.event_time:
        plan.interval.event_time.field_type(decoder)


def _check_folder_columns(plan: ReadPlan[Any], names: list[str]) -> None:
    """A partition path's ``key=value`` folders are columns to the engines that read them;
    a record's column of the same name would be two columns to them under one name."""
    if plan.output is None or not plan.output.partition_path:
        return
    lower = {n.lower(): n for n in names}
    for key in PartitionPath(plan.output.partition_path).keys:
        if key.lower() in lower:
            raise ConfigError(f"output.partition_path: the folder column {key!r} has the name "
                              f"of the records' column {lower[key.lower()]!r}; engines that "
                              "read the folders as columns (DuckDB, Spark, Hive, Glue) would "
                              "see two; name the folder otherwise (e.g. dt=%Y-%m-%d)")
