"""The read and commit tasks' inputs and outputs for Airflow's OpenLineage provider.

The provider's listener asks an operator for ``get_openlineage_facets_on_start`` /
``_on_complete`` (its ``DefaultExtractor``) only when OpenLineage is configured (a transport,
a config file or ``OPENLINEAGE_URL``); without one the listener is not even registered and
none of this runs. Datasets are named as the spec names them (``streamslice.monitoring.lineage``):
the topics or streams a run read, each with the records read from it (``inputStatistics``), and
the output — its location, with its catalog name as a symlink for an Iceberg table — with
the records written (``outputStatistics``). A ``streamslice`` run facet carries the run's
partition, batch and counts.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..commit.publishers import publisher_for
from ..sources import source_class

if TYPE_CHECKING:
    from ..commit.manifest import Manifest
    from ..planning.plan import OutputTarget, ReadPlan
    from ..reading.stats import SplitSummary

RUN_FACET = "streamslice"


def operator_lineage(plan: ReadPlan[Any], summaries: list[SplitSummary] | None = None,
                     manifest: Manifest | None = None) -> Any:
    """``OperatorLineage`` of a run: without counts when they are not known yet (a task's
    start), with what the readers saw (``summaries``) or what was published
    (``manifest``)."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import InputDataset, OutputDataset
    from openlineage.client.facet_v2 import (
        input_statistics_input_dataset,
        output_statistics_output_dataset,
        symlinks_dataset,
    )
    from openlineage.client.generated.base import DatasetFacet, OutputDatasetFacet, RunFacet
    if manifest is not None:
        summaries = manifest.splits
    by_split = {s.split: s for s in summaries or []}
    readers = source_class(plan.source).readers()
    read: dict[Any, int] = {}
    for split in plan.splits:
        name = readers.lineage_dataset(plan, split)
        found = by_split.get(split.id)
        read[name] = read.get(name, 0) + (found.scanned if found else 0)
    inputs = [InputDataset(namespace=n.namespace, name=n.name, inputFacets={
        "inputStatistics": input_statistics_input_dataset.InputStatisticsInputDatasetFacet(
            rowCount=count)} if summaries is not None else {}) for n, count in read.items()]
    outputs = []
    if plan.output is not None:
        location, table = publisher_for(plan.output).lineage_dataset()
        facets: dict[str, DatasetFacet] = {}
        if table is not None:
            facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(identifiers=[
                symlinks_dataset.Identifier(table.namespace, table.name, "TABLE")])
        output_facets: dict[str, OutputDatasetFacet] = {}
        if summaries is not None:
            written = manifest.records if manifest is not None else \
                sum(s.records for s in summaries)
            output_facets["outputStatistics"] = output_statistics_output_dataset.\
                OutputStatisticsOutputDatasetFacet(rowCount=written)
        outputs.append(OutputDataset(namespace=location.namespace, name=location.name,
                                     facets=facets, outputFacets=output_facets))
    run: dict[str, str | int | None] = {"pipeline": plan.pipeline, "partition": plan.partition,
                                        "batch": plan.batch, "splits": len(plan.splits)}
    if summaries is not None:
        run.update(records=sum(s.records for s in summaries),
                   dead_letters=sum(s.dead_letters for s in summaries),
                   late_records=sum(s.late for s in summaries))
    return OperatorLineage(inputs=inputs, outputs=outputs,
                           run_facets={RUN_FACET: RunFacet().with_additional_properties(**run)})


def output_lineage(output: OutputTarget) -> Any:
    """The output alone (a task's start), or None where naming it needs the table and there
    is none yet."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import OutputDataset
    try:
        location, _ = publisher_for(output).lineage_dataset()
    except Exception:  # noqa: BLE001 - lineage is optional: a table not created, a catalog out of reach
        return None
    return OperatorLineage(outputs=[OutputDataset(namespace=location.namespace,
                                                  name=location.name)])
