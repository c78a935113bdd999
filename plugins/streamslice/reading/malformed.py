"""What a DataFrame read does with a record that does not decode: Spark's parse modes, as its
file sources and ``from_json`` take them (option ``mode``, Spark's ``FailureSafeParser``).

- ``PERMISSIVE`` (the default): the record is a row; its decoded columns are null and the
  corrupt-record column (``columnNameOfCorruptRecord``, ``_corrupt_record`` as Spark's
  ``spark.sql.columnNameOfCorruptRecord``) holds the raw record and the reason, a struct
  (Kafka: ``key``, ``value``, ``error``; Kinesis: ``data``, ``error``; files: ``value``,
  ``error``): Spark's is a string, but a record's bytes (Avro, Protobuf) are not always text,
  and the reason is what a user needs next. The column is null on every decoded row.
- ``DROPMALFORMED``: the record is dropped.
- ``FAILFAST``: the first such record fails the query with Spark's text.

The column is only there when a record can fail to decode (a key or value format other than
``raw``), so a plain read keeps exactly the columns of Spark's Kafka source. A task that met
such records logs one warning with their count and the first reasons (``log``), so none goes
without a trace, whichever the mode.

The Airflow DAG's reads do not come here: they stage dead letters (``reading.loop``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import ConfigError, DecodeError

if TYPE_CHECKING:
    from collections.abc import Sequence

MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
DEFAULT_COLUMN = "_corrupt_record"  # Spark's spark.sql.columnNameOfCorruptRecord
log = logging.getLogger("streamslice.spark")


@dataclass(frozen=True)
class ParseMode:
    mode: str = "PERMISSIVE"
    column: str = DEFAULT_COLUMN

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"option mode: {self.mode!r} is not one of: {', '.join(MODES)}")
        if not self.column:
            raise ConfigError("option columnNameOfCorruptRecord is empty")

    def schema(self, records: pa.Schema, raw: Sequence[pa.Field], can_fail: bool) -> pa.Schema:
        """The DataFrame's schema: the source's columns, and in PERMISSIVE mode, where a
        record can fail to decode, every column nullable (a corrupt row has nulls, as Spark
        forces for this mode) and the corrupt-record column last."""
        if self.mode != "PERMISSIVE" or not can_fail:
            return records
        clash = [f.name for f in records if f.name.lower() == self.column.lower()]
        if clash:
            raise ConfigError(f"the column {clash[0]!r} would be there twice: it is the "
                              "corrupt-record column of mode PERMISSIVE; set option "
                              "columnNameOfCorruptRecord to another name")
        return pa.schema([*(f.with_nullable(True) for f in records),
                          pa.field(self.column, corrupt_type(raw))])


def corrupt_type(raw: Sequence[pa.Field]) -> pa.StructType:
    return pa.struct([*raw, pa.field("error", pa.string())])


class Malformed:
    """One split's records that did not decode, as ``ParseMode`` says (``where``: the split,
    for the messages)."""

    def __init__(self, mode: ParseMode, schema: pa.Schema, where: str) -> None:
        self.mode, self.schema, self.where = mode, schema, where
        self.count = 0
        self.first_reasons: list[str] = []
        self.permissive = mode.mode == "PERMISSIVE" and mode.column in schema.names

    def rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Decoded records, with a null corrupt-record column where the schema has one."""
        if not self.permissive:
            return batch
        typ = self.schema.field(self.mode.column).type
        return pa.RecordBatch.from_arrays(
            [*batch.columns, pa.nulls(batch.num_rows, typ)], schema=self.schema)

    def dead(self, dead: pa.RecordBatch) -> pa.RecordBatch | None:
        """Records that did not decode (a dead-letter batch: the raw parts, the source's
        columns, ``error``) → corrupt rows (PERMISSIVE), nothing (DROPMALFORMED), or
        DecodeError with Spark's text (FAILFAST)."""
        if not dead.num_rows:
            return None
        reasons = dead.column("error").to_pylist()
        if self.mode.mode == "FAILFAST":
            raise DecodeError(
                "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are "
                f"detected in record parsing: {self.where} {_position(dead, 0)}: "
                f"{reasons[0]}. Parse Mode: FAILFAST. To process malformed records as null "
                "result, try setting the option 'mode' as 'PERMISSIVE'.")
        self.count += dead.num_rows
        for row, reason in enumerate(reasons[:3 - len(self.first_reasons)]):
            self.first_reasons.append(f"{_position(dead, row)}: {reason}")
        if not self.permissive:
            return None
        corrupt = self.schema.field(self.mode.column).type
        parts = [dead.column(f.name) for f in corrupt]
        columns = []
        for field in self.schema:
            if field.name == self.mode.column:
                columns.append(pa.StructArray.from_arrays(parts, fields=list(corrupt)))
            elif field.name in dead.schema.names and \
                    dead.schema.field(field.name).type == field.type:
                columns.append(dead.column(field.name))  # topic, offset, a raw key, …
            else:
                columns.append(pa.nulls(dead.num_rows, field.type))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def log(self, records: int) -> None:
        """One warning for the split, if any of its records did not decode: on the
        executor's log (on ``local[*]`` the driver's), and with Spark's
        ``spark.sql.pyspark.worker.logging.enabled`` in ``spark.tvf.python_worker_logs()``."""
        if not self.count:
            return
        what = {"PERMISSIVE": f"kept as rows with {self.mode.column}",
                "DROPMALFORMED": "dropped"}[self.mode.mode]
        log.warning("%s: %d of %d records are malformed (mode %s: %s); first: %s",
                    self.where, self.count, records, self.mode.mode, what,
                    "; ".join(self.first_reasons))


def _position(dead: pa.RecordBatch, row: int) -> str:
    for name in ("offset", "sequenceNumber", "line"):
        if name in dead.schema.names:
            return f"{name} {dead.column(name)[row].as_py()}"
    return f"record {row}"
