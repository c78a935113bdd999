"""``spark.read.format("streamslice-<kind>")`` for every registered source (``sources.SOURCES``):
PySpark 4 Python Data Sources whose input partitions are a ReadPlan's splits.

Give them a ReadPlan (``plan`` option, as the Airflow DAG does) or the source's own options
(Spark-Kafka style ``subscribe``/``startingOffsets``/… for Kafka; ``streamName``/
``startingPosition``/… for Kinesis) and they plan on the driver. Client properties come as
``kafka.*`` / ``aws.*`` options and never enter the plan. ``staging`` makes readers leave split
summaries and dead letters there; ``directWrite`` (a pyarrow codec, with ``staging``) makes
them write each split's records to a Parquet file there themselves and return no rows
(``reading.sink``, used by ``job.run_read``). On that path an input partition (a Spark task)
reads several small splits one after the other (``planning.packing``: ``taskSlots`` is the
session's parallelism, ``packSplits`` false keeps one split a task), each into its own file
and summary as before; a DataFrame read keeps one input partition per split.

Without ``staging`` (a DataFrame read) there are no dead-letter files: a record that does not
decode is a row of the corrupt-record column, dropped, or the query's failure, as Spark's
``mode`` says (``reading.malformed``), and each task logs how many there were.

``spark.readStream`` of the same formats is ``stream.PlanStreamReader``; both read through
``plan_reader.PlanReader``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema

from ..sources import SOURCES
from .plan_reader import PlanReader, dataframe_schema, user_errors
from .stream import PlanStreamReader

if TYPE_CHECKING:
    import pyarrow as pa

    from ..planning.plan import ReadPlan
    from ..reading.malformed import ParseMode


class PlannedSource(DataSource):
    kind: str = ""

    @classmethod
    def name(cls) -> str:
        return f"streamslice-{cls.kind}"

    def _plan(self) -> ReadPlan[Any]:
        if not hasattr(self, "_cached_plan"):
            from streamslice.spark.plan_options import plan_from_options
            self._cached_plan = plan_from_options(dict(self.options), self.kind)
        return self._cached_plan

    def _mode(self) -> ParseMode | None:
        """Spark's parse mode for a DataFrame read; None on the DAG's path (``staging``),
        which stages dead letters instead."""
        from streamslice.spark.plan_options import parse_mode
        options = {k.lower(): v for k, v in self.options.items()}
        return None if options.get("staging") else parse_mode(options, self._plan())

    def _schema(self) -> pa.Schema:
        if not hasattr(self, "_cached_schema"):
            self._cached_schema = dataframe_schema(self._plan(), self._mode())
        return self._cached_schema

    @user_errors
    def schema(self) -> Any:
        """Spark asks for the schema of ``spark.read`` and ``spark.readStream`` alike, without
        saying which. A batch read's options are planned now, so a bad one fails when the
        DataFrame is defined; options only a stream takes (``startingOffsets`` ``latest``) get
        the stream's schema, and a batch read of them fails when it is planned."""
        from streamslice.errors import ConfigError
        try:
            return from_arrow_schema(self._schema())
        except ConfigError as exc:
            if not getattr(exc, "stream_only", False) or not self._stream_options_hold():
                raise
            return from_arrow_schema(self._stream_schema())

    def _stream_options_hold(self) -> bool:
        from streamslice.errors import StreamsliceError
        try:
            self._stream_schema()
        except StreamsliceError:
            return False
        return True

    def _stream_schema(self) -> pa.Schema:
        from streamslice.spark.plan_options import parse_mode
        from streamslice.spark.stream import open_stream
        _, plan = open_stream(dict(self.options), self.kind)
        return dataframe_schema(plan, parse_mode(dict(self.options), plan))

    @user_errors
    def reader(self, schema: Any) -> PlanReader:
        return PlanReader(self._plan(), dict(self.options), self._mode(), self._schema())

    def streamReader(self, schema: Any) -> Any:
        return PlanStreamReader(self.kind, dict(self.options))


def _data_source(kind: str) -> type[PlannedSource]:
    """A module-level DataSource class for one registered source (module-level, so Spark's
    Python workers can unpickle it by name)."""
    name = f"{kind.capitalize()}DataSource"
    cls = type(name, (PlannedSource,), {"kind": kind, "__module__": __name__})
    globals()[name] = cls
    return cls


DATA_SOURCES = [_data_source(kind) for kind in SOURCES]


def register(spark: Any) -> None:
    for cls in DATA_SOURCES:
        spark.dataSource.register(cls)
