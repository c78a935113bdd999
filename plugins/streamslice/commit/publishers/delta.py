"""Delta Lake tables through deltalake (delta-rs): one atomic commit per run.

The dataset folder is the table (or ``output.table``, a path or ``s3://`` URI), partitioned by
the run's partition name. A run replaces its partition with an overwrite whose predicate is
that partition (``mode=overwrite, predicate=…``), in one commit; an incremental batch also
records a Delta application transaction (app id = pipeline, version = batch), Delta's own
idempotent-writer mechanism. With ``output.partition_by`` (``day(event_time)``) the table is
partitioned by a column of that transform's values instead (``event_time_day``, computed here,
``transforms.delta_partition_field``), so a time filter prunes; the run's replace stays the same
one overwrite of the rows its predicate names (``streamslice_partition``): each file a run
writes holds only that run's rows, so the replace removes whole files. Commit info carries the
pipeline, run id, plan id, end positions and the manifest, which is how a retry finds its
own commit.

delta-rs cannot register files it did not write, so the staged Parquet is read and written
again by delta-rs (streamed, batch by batch); the benchmark shows what that costs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from ...aws.storage import delta_storage_options
from ...errors import CommitError, faults
from ...monitoring.lineage import location_dataset
from . import PARTITION_COLUMN, OutputSettings
from .files import publish_dead_letters, require_staged, staged_files
from .tables import (
    TableSettings,
    check_compatible,
    commit_properties,
    commits_plan,
    manifest_from,
    table_schema,
)
from .transforms import delta_partition_field, delta_partition_values, parse_partition_by

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    import pyarrow.dataset as ds

    from ...config.fields import Fields
    from ...monitoring.lineage import DatasetName
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging
    from ..manifest import Manifest, Publishable
    from . import Published, TargetFields


@dataclass(frozen=True)
class DeltaSettings(TableSettings):
    """A Delta output: the table's URI (the dataset folder by default)."""

    @classmethod
    def parse(cls, f: Fields, fmt: str, path: str) -> DeltaSettings:
        return cls(table=f.str("table", None), partition_by=cls.parse_partition_by(f))

    def target(self, dataset: str, pipeline: str) -> TargetFields:
        return {"table": self.table or dataset,  # the dataset folder is the Delta table
                "partition_by": self.partition_by}


class DeltaPublisher:
    name: ClassVar[str] = "delta"
    settings: ClassVar[type[OutputSettings]] = DeltaSettings
    extra: ClassVar[str | None] = "delta"
    stages: ClassVar[str | None] = "parquet"

    def __init__(self, output: OutputTarget) -> None:
        self.output = output
        assert output.table is not None
        self.table_uri = output.table

    def uri(self, plan: ReadPlan[Any]) -> str:
        return f"{self.table_uri}#{plan.partition}"

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs's S3 options with the output's identity (credentials of the moment), or
        None: it then finds its own, as from ``AWS_*`` variables."""
        return delta_storage_options(self.table_uri, self.output.auth)

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        return location_dataset(self.table_uri), None  # a Delta table is its location

    def published_manifest(self, plan: ReadPlan[Any]) -> Manifest | None:
        found = self._commit_of(plan)
        return manifest_from(*found) if found else None

    def _commit_of(self, plan: ReadPlan[Any], latest: int | None = None
                   ) -> tuple[Mapping[str, object], Published] | None:
        """The commit that published ``plan`` and where it landed, searched in the ``latest``
        commits only, if given (each one read costs I/O)."""
        from deltalake import DeltaTable
        if not DeltaTable.is_deltatable(self.table_uri, self.storage_options()):
            return None
        table = DeltaTable(self.table_uri, storage_options=self.storage_options())
        for entry in table.history(latest):  # newest first
            if commits_plan(entry, plan):
                return entry, {"uri": self.uri(plan), "version": entry.get("version")}
        return None

    def finish(self, plan: ReadPlan[Any]) -> None:
        """Nothing: the table's commit is the publish's last step."""

    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
        require_staged(staging, manifest.records)
        schema = table_schema(plan)
        by = self.output.partition_by
        if by:
            schema = schema.append(delta_partition_field(by))
        partition_by = [schema.names[-1]]  # streamslice_partition, or the time column
        storage = self.storage_options()
        exists = DeltaTable.is_deltatable(self.table_uri, storage)
        if exists:  # an incompatible schema fails here, before anything lands
            table = DeltaTable(self.table_uri, storage_options=storage)
            self._check_partitioning(table.metadata().partition_columns, partition_by)
            existing = pa.schema(table.schema().to_arrow())
            check_compatible(existing, schema, f"Delta table {self.table_uri}",
                             widen=False)  # delta-rs keeps a column's type
        publish_dead_letters(self.output, plan, staging)
        files = staged_files(staging)
        import pyarrow.dataset as ds  # here: it imports pandas (~0.3 s where nothing publishes)
        data = ds.dataset(files, format="parquet", filesystem=staging.fs) if files else None
        reader = _batches(data, schema, by)
        txns = [Transaction(app_id=plan.pipeline, version=plan.batch)] if plan.batch else None
        props = CommitProperties(custom_metadata=commit_properties(plan, manifest),
                                 app_transactions=txns)
        faults.check("table_commit")
        try:
            if exists:  # replace the partition, one commit
                write_deltalake(self.table_uri, reader, partition_by=partition_by,
                                mode="overwrite",
                                predicate=f"{PARTITION_COLUMN} = '{plan.partition}'",
                                schema_mode="merge", commit_properties=props,
                                storage_options=storage)
            else:
                write_deltalake(self.table_uri, reader, partition_by=partition_by,
                                mode="append", commit_properties=props,
                                storage_options=storage)
        except Exception as exc:  # noqa: BLE001 - delta-rs reports schema conflicts as generic errors
            raise CommitError(f"Delta commit to {self.table_uri} failed: "
                              f"{type(exc).__name__}: {exc}") from None
        staging.fs.delete_dir(staging.root)
        # Ours is the newest commit unless another writer got in since: then search them all.
        found = self._commit_of(plan, latest=1) or self._commit_of(plan)
        return found[1] if found else {"uri": self.uri(plan)}

    def _check_partitioning(self, have: list[str], wanted: list[str]) -> None:
        """A table is partitioned as the pipeline says, or nothing is published (delta-rs would
        refuse the write less plainly)."""
        if have != wanted:
            by = self.output.partition_by
            raise CommitError(f"Delta table {self.table_uri} is partitioned by "
                              f"{', '.join(have) or 'nothing'}, the pipeline by "
                              f"{', '.join(wanted)}"
                              f"{f' (output.partition_by: {by})' if by else ''}"
                              "; nothing was published: write to a new table")


def _batches(data: ds.Dataset | None, schema: pa.Schema, partition_by: str | None
             ) -> pa.RecordBatchReader:
    """The staged records in the table's schema (streamed), with the partition column of
    ``output.partition_by`` computed from its record column when there is one."""
    if data is None:
        return pa.RecordBatchReader.from_batches(schema, iter(()))
    records = schema.remove(len(schema) - 1) if partition_by else schema
    scanner = data.scanner(columns=records.names)

    def batches() -> Iterator[pa.RecordBatch]:
        for b in scanner.to_batches():
            b = b.cast(records) if b.schema != records else b
            if partition_by:
                _, column = parse_partition_by(partition_by)
                b = b.append_column(schema.field(len(schema) - 1),
                                    delta_partition_values(partition_by, b.column(column)))
            yield b
    return pa.RecordBatchReader.from_batches(schema, batches())
