"""The Publisher contract and the registry of publishers.

A publisher moves one verified staging area into the dataset as the plan's partition, in one
step readers can rely on, and says whether a plan was already published (so a retried commit
does not publish twice). A new output (a table format) is one module here plus one line in
``PUBLISHERS``.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...lineage import DatasetName
    from ...planning.plan import OutputTarget, ReadPlan
    from ...reading.staging import Staging

# OutputTarget.publisher → "module:Class", imported on first use.
PUBLISHERS: dict[str, str] = {
    "files": "streamslice.commit.publishers.files:FilesPublisher",
    "iceberg": "streamslice.commit.publishers.iceberg:IcebergPublisher",
    "delta": "streamslice.commit.publishers.delta:DeltaPublisher",
}
# Table publishers partition by this column (the run's partition name, e.g. interval=…), so
# replacing an interval is a partition overwrite.
PARTITION_COLUMN = "streamslice_partition"


def staged_constants(plan: ReadPlan) -> dict[str, str]:
    """Columns the staged files carry besides the records, each with one value: the
    partition name, for the table publishers."""
    if plan.output and plan.output.publisher != "files":
        return {PARTITION_COLUMN: plan.partition}
    return {}


class Publisher(Protocol):
    def __init__(self, output: OutputTarget) -> None: ...

    def publish(self, plan: ReadPlan, staging: Staging, manifest: dict[str, Any]) -> Published:
        """Publish the staged partition with its manifest; returns where it landed."""

    def published_manifest(self, plan: ReadPlan) -> dict[str, Any] | None:
        """The manifest the plan's partition was published with, if any, with where it
        landed under ``published``."""

    def finish(self, plan: ReadPlan) -> None:
        """What ``publish`` does after the partition is in place (removing what it
        replaced), for a retry that finds the partition published by a try that crashed."""

    def lineage_dataset(self) -> tuple[DatasetName, DatasetName | None]:
        """The output as lineage names it (``streamslice.lineage``): its location, and the
        table's name in its catalog where it has one."""


# Where a run's partition landed: ``uri`` always; a table's ``snapshot_id`` (Iceberg) or
# ``version`` (Delta), the table version to time-travel to for exactly this run's state.
Published = dict[str, Any]


def publisher_for(output: OutputTarget) -> Publisher:
    try:
        module, _, name = PUBLISHERS[output.publisher].partition(":")
    except KeyError:
        raise ValueError(f"unknown publisher {output.publisher!r} "
                         f"(known: {', '.join(PUBLISHERS)})") from None
    publisher: Publisher = getattr(importlib.import_module(module), name)(output)
    return publisher
