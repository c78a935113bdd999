"""``foreachBatch`` into streamslice's table publishers (``commit.publishers``: Delta, Iceberg):
each micro-batch of a ``spark.readStream`` query lands as the table partition
``batch=<batch id>``, in one table commit.

Exactly once without a log of its own: Spark writes a batch's offsets before it runs and
commits the batch after ``foreachBatch`` returns, so a query killed between the table's commit
and Spark's runs the same batch id over the same offsets again when it restarts, and the
publisher replaces that partition with the same records (a partition overwrite, as a DAG run's
retry does). A batch killed before the table's commit left only its staging area, which the
rerun writes afresh.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.pipeline import Output


def publish_batches(kind: str, options: dict[str, str], output: Output,
                    pipeline: str = "stream") -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a query reading ``streamslice-<kind>`` with
    ``options`` (the same options, so the table's schema is the records'), publishing to
    ``output`` (``config.pipeline.Output``: ``format`` ``delta`` or ``iceberg`` and its
    settings) as ``pipeline``'s dataset."""
    from ..commit.publishers import (
        PARTITION_COLUMN,
        OutputSettings,
        publisher_class,
        publisher_for,
    )
    from ..errors import ConfigError
    from .stream import open_stream
    if output.format not in ("delta", "iceberg"):
        raise ConfigError(f"output format {output.format!r}: foreachBatch publishes to a "
                          "delta or iceberg table (Spark's file sink writes Parquet folders)")
    _, template = open_stream(options, kind)
    if type(output.settings) is OutputSettings:  # the format's own, at their defaults
        output = replace(output, settings=publisher_class(output.format).settings())
    target = output.target(pipeline)

    def publish(batch: Any, batch_id: int) -> None:
        from pyspark.sql.functions import lit

        from ..commit.manifest import StreamBatchManifest
        from ..commit.protocol import staging_for
        from ..errors import faults
        partition = f"batch={batch_id:08d}"
        plan = replace(template, pipeline=pipeline, partition=partition, batch=batch_id + 1,
                       output=target, run_id=f"stream-batch-{batch_id}")
        staging = staging_for(plan, "stream")
        records = batch.withColumn(PARTITION_COLUMN, lit(partition))
        records.write.mode("overwrite").parquet(staging.data_uri)
        publisher_for(target).publish(plan, staging, StreamBatchManifest(plan.run_id))
        faults.check("after_publish")

    return publish
