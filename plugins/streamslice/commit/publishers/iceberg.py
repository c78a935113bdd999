"""Apache Iceberg tables through pyiceberg: one atomic catalog commit per run.

The table is partitioned by identity on the run's partition name (``interval=…`` or
``batch=…``). A run moves the staged Parquet files into the table's data folder and, in
one transaction, deletes the partition's rows and registers the new files (``add_files``:
nothing is rewritten). Readers see the old partition or the new one. Every snapshot records
the pipeline, run id, plan id, the end position of every split and the manifest in its summary,
which is how a retry finds its own commit instead of committing twice.
"""
from __future__ import annotations

import os
import re
import uuid
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.fs as pafs

from ...aws.storage import filesystem, iceberg_properties
from ...errors import CommitError, faults
from ...monitoring.lineage import DatasetName, location_dataset
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
from .transforms import iceberg_transform, parse_partition_by

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyiceberg.table import Table

    from ...config.fields import Fields
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging
    from ..manifest import Manifest, Publishable
    from . import Published, TargetFields


@dataclass(frozen=True)
class IcebergSettings(TableSettings):
    """An Iceberg output: its table, and the pyiceberg catalog that holds it."""

    keys: ClassVar[dict[str, str]] = {
        **TableSettings.keys, "catalog": "is only used with format iceberg",
        "conn_id": "is only used with format iceberg (its catalog's connection)"}
    catalog: dict[str, str] = field(default_factory=dict)  # pyiceberg catalog properties
    conn_id: str | None = None  # an Airflow connection with more catalog properties

    @classmethod
    def parse(cls, f: Fields, fmt: str, path: str) -> IcebergSettings:
        table = f.str("table", None)
        catalog = f.raw("catalog", None)
        conn_id = f.str("conn_id", None)
        if table and not re.fullmatch(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+", table):
            raise f.error(f"{table!r} is not namespace.table", "table")
        if catalog is None and conn_id:
            catalog = {}
        elif catalog is None:
            if "://" in path and not path.startswith("file://"):
                raise f.error("is required for an iceberg table outside the local file system "
                              "(pyiceberg catalog properties: type sql, rest or glue, …)",
                              "catalog")
            local = path.removeprefix("file://")
            # A deployment may name its SQL catalog (docker-compose: its PostgreSQL).
            uri = os.environ.get("STREAMSLICE_ICEBERG_CATALOG_URI") or \
                f"sqlite:///{local}/_streamslice/iceberg.db"
            catalog = {"type": "sql", "uri": uri, "warehouse": f"file://{local}"}
        if not isinstance(catalog, dict) or ("type" not in catalog and not conn_id):
            raise f.error("must map pyiceberg catalog properties, with type (sql, rest, glue)",
                          "catalog")
        return cls(table=table, catalog={str(k): str(v) for k, v in catalog.items()},
                   conn_id=conn_id, partition_by=cls.parse_partition_by(f))

    def target(self, dataset: str, pipeline: str) -> TargetFields:
        table = self.table or "streamslice." + re.sub(r"[^A-Za-z0-9_]", "_", pipeline)
        return {"table": table, "catalog": dict(self.catalog), "conn_id": self.conn_id,
                "partition_by": self.partition_by}

    def on_aws(self) -> bool:
        return self.catalog.get("type") == "glue"


class IcebergPublisher:
    name: ClassVar[str] = "iceberg"
    settings: ClassVar[type[OutputSettings]] = IcebergSettings
    extra: ClassVar[str | None] = "iceberg"
    stages: ClassVar[str | None] = "parquet"

    def __init__(self, output: OutputTarget) -> None:
        from pyiceberg.catalog import load_catalog
        self.output = output
        assert output.table is not None
        self.identifier = output.table
        props = dict(output.catalog)
        name = props.pop("name", "streamslice")  # SQL catalogs key their tables by it
        if props.get("type") == "sql" and props.get("uri", "").startswith("sqlite:///"):
            folder = props["uri"].removeprefix("sqlite:///").rsplit("/", 1)[0]
            pafs.LocalFileSystem().create_dir(folder, recursive=True)
        props = iceberg_properties(props, output.auth)  # output.aws: S3 FileIO, Glue
        try:
            self.catalog = load_catalog(name, **props)
        except Exception as exc:  # noqa: BLE001 - each catalog type raises its own errors
            raise CommitError(f"cannot open the Iceberg catalog ({props.get('type')}): "
                              f"{type(exc).__name__}: {exc}") from None

    def uri(self, plan: ReadPlan[Any]) -> str:
        return f"iceberg:{self.identifier}/{plan.partition}"

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        """The table's location (as Spark's OpenLineage integration names Iceberg tables),
        and its name in the catalog: a Glue catalog's ARN form (``glue.id`` is the account)
        where it is known, else ``namespace.table`` beside the location."""
        location = location_dataset(self.catalog.load_table(self.identifier).location())
        props = self.output.catalog
        database, _, table = self.identifier.rpartition(".")
        region = props.get("glue.region") or props.get("client.region")
        if props.get("type") == "glue" and props.get("glue.id") and region:
            return location, DatasetName(f"arn:aws:glue:{region}:{props['glue.id']}",
                                         f"table/{database}/{table}")
        return location, DatasetName(location.namespace, self.identifier)

    def _table(self, plan: ReadPlan[Any], create: bool) -> Table | None:
        from pyiceberg.exceptions import NoSuchTableError
        try:
            return self.catalog.load_table(self.identifier)
        except NoSuchTableError:
            if not create:
                return None
        namespace = self.identifier.rsplit(".", 1)[0]
        self.catalog.create_namespace_if_not_exists(namespace)
        table = self.catalog.create_table_if_not_exists(self.identifier,
                                                        schema=table_schema(plan))
        if not table.spec().fields:
            with table.update_spec() as spec:
                if self.output.partition_by:
                    name, column = parse_partition_by(self.output.partition_by)
                    spec.add_field(column, iceberg_transform(name), f"{column}_{name}")
                else:
                    spec.add_identity(PARTITION_COLUMN)
            if self.output.partition_by:  # exact bounds: a run's replace stays metadata-only
                with table.transaction() as tx:
                    tx.set_properties({
                        f"write.metadata.metrics.column.{PARTITION_COLUMN}": "full"})
        return self.catalog.load_table(self.identifier)

    def _check_spec(self, table: Table) -> None:
        """A table is partitioned as ``output.partition_by`` says, or nothing is published.
        Without it, any table takes the run (as before the setting: its rows are replaced by
        ``streamslice_partition`` whatever the table's spec)."""
        if not self.output.partition_by:
            return
        name, column = parse_partition_by(self.output.partition_by)
        wanted: list[tuple[str | None, str]] = [(column, name)]
        schema = table.schema()
        have = [(schema.find_column_name(f.source_id), str(f.transform))
                for f in table.spec().fields]
        if have != wanted:
            def show(fields: list[tuple[str | None, str]]) -> str:
                return ", ".join(f"{t}({c})" for c, t in fields) or "nothing"
            raise CommitError(f"Iceberg table {self.identifier} is partitioned by "
                              f"{show(have)}, the pipeline by {show(wanted)} "
                              "(output.partition_by); nothing was published: write to a new "
                              "table or evolve this one's partition spec")

    def published_manifest(self, plan: ReadPlan[Any]) -> Manifest | None:
        table = self._table(plan, create=False)
        found = None if table is None else self._snapshot_of(table, plan)
        return manifest_from(*found) if found else None

    def _snapshot_of(self, table: Table, plan: ReadPlan[Any]
                     ) -> tuple[Mapping[str, object], Published] | None:
        """The snapshot that published ``plan`` (its summary) and where it landed."""
        for snapshot in reversed(table.snapshots()):  # the newest: the one holding the files
            props = snapshot.summary.additional_properties if snapshot.summary else {}
            if commits_plan(props, plan):
                return props, {"uri": self.uri(plan), "snapshot_id": snapshot.snapshot_id}
        return None

    def finish(self, plan: ReadPlan[Any]) -> None:
        """Nothing: the table's commit is the publish's last step."""

    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        require_staged(staging, manifest.records)
        table = self._table(plan, create=True)
        assert table is not None  # created when missing
        self._check_spec(table)
        self._evolve(table, plan)  # an incompatible schema fails here, before anything lands
        publish_dead_letters(self.output, plan, staging)
        table = self.catalog.load_table(self.identifier)
        if self.output.partition_by:
            return self._rewrite(table, plan, staging, manifest)
        files = self._move_into_table(table, plan, staging)
        faults.check("table_commit")  # files in the table's folder, not yet committed
        props = commit_properties(plan, manifest)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Delete operation did not match any records"
            with table.transaction() as tx:  # one catalog commit: old rows out, new files in
                tx.delete(f"{PARTITION_COLUMN} == '{plan.partition}'",
                          snapshot_properties=props)
                if files:
                    tx.add_files(files, snapshot_properties=props)
        staging.fs.delete_dir(staging.root)
        found = self._snapshot_of(table, plan)  # the commit left the table at its metadata
        return found[1] if found else {"uri": self.uri(plan)}

    def _rewrite(self, table: Table, plan: ReadPlan[Any], staging: Staging,
                 manifest: Publishable) -> Published:
        """A table partitioned by a time transform of a record column: a run's records span
        partitions (late and early ones, an interval wider than the transform), which
        ``add_files`` cannot register, so pyiceberg writes them again, one file per partition,
        in the same one transaction that deletes the run's earlier rows."""
        import pyarrow.dataset as ds
        files = staged_files(staging)
        schema = table.schema().as_arrow()
        data = ds.dataset(files, format="parquet", filesystem=staging.fs).to_table() \
            if files else schema.empty_table()
        data = data.select([n for n in schema.names if n in data.column_names])
        data = data.cast(pa.schema([schema.field(n) for n in data.column_names]))
        faults.check("table_commit")
        props = commit_properties(plan, manifest)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Delete operation did not match any records"
            with table.transaction() as tx:
                tx.delete(f"{PARTITION_COLUMN} == '{plan.partition}'",
                          snapshot_properties=props)
                if data.num_rows:
                    tx.append(data, snapshot_properties=props)
        staging.fs.delete_dir(staging.root)
        found = self._snapshot_of(table, plan)
        return found[1] if found else {"uri": self.uri(plan)}

    def _evolve(self, table: Table, plan: ReadPlan[Any]) -> None:
        """A new nullable field evolves the table, at any depth; a change the table's rows
        cannot follow is refused naming each field (``tables.schema_changes``)."""
        wanted = table_schema(plan)
        check_compatible(table.schema().as_arrow(), wanted, f"Iceberg table {self.identifier}")
        try:
            with table.update_schema() as update:
                update.union_by_name(wanted)
        except Exception as exc:  # noqa: BLE001 - pyiceberg's errors vary by catalog
            raise CommitError(f"incompatible schema change for Iceberg table "
                              f"{self.identifier}: {exc}") from None

    def _move_into_table(self, table: Table, plan: ReadPlan[Any], staging: Staging) -> list[str]:
        """Staged files → the table's data folder, leaving the staging area whole until the
        commit (so a crash before it leaves a retry something to publish): hard links on a
        local file system (no copy), a server-side copy on object stores. Returns the URIs."""
        location = table.location().rstrip("/")
        fs, root = filesystem(location, self.output.auth)
        folder = f"{root}/data/{PARTITION_COLUMN}={plan.partition}"
        fs.create_dir(folder, recursive=True)
        out = []
        for path in staged_files(staging):
            name = f"{uuid.uuid4().hex[:12]}-{path.rsplit('/', 1)[-1]}"
            if fs.type_name == staging.fs.type_name == "local":
                os.link(path, f"{folder}/{name}")
            else:
                pafs.copy_files(path, f"{folder}/{name}", source_filesystem=staging.fs,
                                destination_filesystem=fs)
            out.append(f"{location}/data/{PARTITION_COLUMN}={plan.partition}/{name}")
        return out
