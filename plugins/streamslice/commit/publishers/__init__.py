"""The Publisher contract and the registry of publishers.

A publisher moves one verified staging area into the dataset as the plan's partition, in one
step readers can rely on, and says whether a plan was already published (so a retried commit
does not publish twice). A new output (a table format) is one module here plus one line in
``PUBLISHERS``: its publisher class, and the frozen dataclass of the ``output:`` keys it takes
(``OutputSettings``: parsed from the pipeline file with errors naming file, line and field,
and turned into the plan's ``OutputTarget``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypedDict

from ...registry import registered_class

if TYPE_CHECKING:
    from ...config.fields import Fields
    from ...monitoring.lineage import DatasetName
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging
    from ..manifest import Manifest, Publishable

# output.format → the "module:Class" of the publisher that lands it, imported on first use
# (its order: the choices errors list).
PUBLISHERS: dict[str, str] = {
    "parquet": "streamslice.commit.publishers.files:FilesPublisher",
    "json": "streamslice.commit.publishers.files:FilesPublisher",
    "orc": "streamslice.commit.publishers.files:FilesPublisher",
    "iceberg": "streamslice.commit.publishers.iceberg:IcebergPublisher",
    "delta": "streamslice.commit.publishers.delta:DeltaPublisher",
}
# Table publishers partition by this column (the run's partition name, e.g. interval=…), so
# replacing an interval is a partition overwrite.
PARTITION_COLUMN = "streamslice_partition"


class TargetFields(TypedDict, total=False):
    """A publisher's own fields of the plan's ``OutputTarget`` (``OutputSettings.target``)."""

    table: str | None
    catalog: dict[str, str]
    conn_id: str | None
    partition_path: str | None
    partition_by: str | None


@dataclass(frozen=True)
class OutputSettings:
    """The keys of the ``output:`` block one publisher takes besides those every output has
    (``path``, ``format``, ``compression``, ``aws``)."""

    # Each key it takes → what a pipeline of another format that sets it is told.
    keys: ClassVar[dict[str, str]] = {}

    @classmethod
    def parse(cls, f: Fields, fmt: str, path: str) -> OutputSettings:
        """Its keys of the ``output:`` block ``f`` (``fmt``, ``path``: read already), each
        error raised with ``f.error(message, key)``; ``f.done()`` is the caller's."""
        return cls()

    def target(self, dataset: str, pipeline: str) -> TargetFields:
        """Its fields of the plan's ``OutputTarget`` for ``pipeline``'s ``dataset``."""
        return {}

    def on_aws(self) -> bool:
        """Whether it reaches AWS by itself (a Glue catalog), so ``output.aws`` applies."""
        return False


class Publisher(Protocol):
    name: ClassVar[str]  # recorded in the plan (``OutputTarget.publisher``)
    settings: ClassVar[type[OutputSettings]]  # the output: keys it takes
    extra: ClassVar[str | None]  # the package extra it needs (``streamslice.config.extras``)
    # What the read job stages for it: None, the output's own format; tables take Parquet
    # files carrying ``PARTITION_COLUMN``.
    stages: ClassVar[str | None]

    def __init__(self, output: OutputTarget) -> None: ...

    def publish(self, plan: ReadPlan[Any], staging: Staging, manifest: Publishable) -> Published:
        """Publish the staged partition with its manifest; returns where it landed."""

    def published_manifest(self, plan: ReadPlan[Any]) -> Manifest | None:
        """The manifest the plan's partition was published with, if any, with where it
        landed under ``published``."""

    def finish(self, plan: ReadPlan[Any]) -> None:
        """What ``publish`` does after the partition is in place (removing what it
        replaced), for a retry that finds the partition published by a try that crashed."""

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        """The output as lineage names it (``streamslice.monitoring.lineage``): its location, and
        the table's name in its catalog where it has one."""


class Published(TypedDict, total=False):
    """Where a run's partition landed: ``uri`` always; a table's ``snapshot_id`` (Iceberg) or
    ``version`` (Delta), the table version to time-travel to for exactly this run's state."""

    uri: str
    snapshot_id: int
    version: int | None


def publisher_class(fmt: str) -> type[Publisher]:
    cls: type[Publisher] = registered_class(PUBLISHERS, fmt, "output format")
    return cls


def publisher_for(output: OutputTarget) -> Publisher:
    return publisher_class(output.format)(output)


def staged_format(output: OutputTarget | None) -> str:
    """The file format the read job stages for ``output``."""
    if output is None:
        return "parquet"
    return publisher_class(output.format).stages or output.format


def staged_constants(plan: ReadPlan[Any]) -> dict[str, str]:
    """Columns the staged files carry besides the records, each with one value: the
    partition name, for the table publishers."""
    if plan.output and publisher_class(plan.output.format).stages is not None:
        return {PARTITION_COLUMN: plan.partition}
    return {}


def parse_output_settings(f: Fields, fmt: str, path: str) -> OutputSettings:
    """The keys of ``output:`` that ``fmt``'s publisher takes (the keys every output has
    are read already). A key only other publishers take is refused in their words; the
    other publishers are imported only then."""
    own = publisher_class(fmt).settings
    f.others_keys(lambda key: next((said.format(format=fmt) for said in (
        publisher_class(other).settings.keys.get(key) for other in PUBLISHERS if other != fmt)
        if said), None), skip=own.keys)
    return own.parse(f, fmt, path)
