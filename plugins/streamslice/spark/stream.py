"""``spark.readStream.format("streamslice-<kind>")``: PySpark's streaming Python data source
(``DataSourceStreamReader`` with read limits and Trigger.AvailableNow) over a source's stream
(``Source.stream(options)``, e.g. ``kafka.spark_stream.KafkaStream``), which keeps the offsets,
limits and ranges. A micro-batch's ranges are splits, read by the batch path's
``PlanReader`` with the source's own readers and decoders: a stream has no read path of its
own. Offsets are the source's Spark JSON, in the query's checkpoint (Spark keeps them there).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from .plan_reader import PlanReader, SplitPartition, dataframe_schema, user_errors

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa

    from ..planning.plan import ReadPlan
    from ..reading.malformed import ParseMode
    from ..records import JsonObject
    from ..sources import Properties


class Stream(Protocol):
    """What a source's ``stream(options)`` gives (``kafka.spark_stream.KafkaStream``)."""

    info: dict[str, Any]  # the plan's source_info
    properties: Properties

    @property
    def limits(self) -> Any: ...

    # Offsets are Spark's offset JSON, as the source writes them
    def initial_offset(self) -> JsonObject: ...

    def prepare_available_now(self) -> None: ...

    def latest_offset(self, start: JsonObject, all_available: bool) -> JsonObject: ...

    def report_latest(self) -> JsonObject | None: ...

    def batch_splits(self, start: JsonObject, end: JsonObject) -> Sequence[Any]: ...

    def close(self) -> None: ...


def open_stream(options: dict[str, str], kind: str) -> tuple[Stream, ReadPlan[Any]]:
    """The source's stream for these options (names checked as for a batch read), and the
    plan its batches are read by: the decoding and the source's facts, no splits."""
    from ..errors import ConfigError
    from ..planning.plan import ReadPlan
    from ..planning.planner import check_columns
    from ..schema_registry.base import split_properties
    from ..sources import source_class
    from .plan_options import check_names, decoding_from_options
    opts = {k.lower(): v for k, v in options.items()}
    cls = source_class(kind)
    factory = getattr(cls, "stream", None)
    if factory is None:
        raise ConfigError(f"streamslice-{kind} cannot be read with spark.readStream yet; "
                          "read it with spark.read")
    check_names(opts, kind, getattr(cls, "stream_options", cls.options), cls.option_prefix)
    if "plan" in opts:
        raise ConfigError("option plan is for spark.read: a streaming query plans its own "
                          "batches")
    stream: Stream = factory(opts)
    registry = {k: v for k, v in opts.items() if k.startswith("schema.registry.")}
    decode = decoding_from_options(opts).prepared({**stream.properties, **registry})
    plan: ReadPlan[Any] = ReadPlan(
        pipeline=opts.get("pipeline", "adhoc"), source=kind, mode="bounded",
        planned_at=int(time.time() * 1000), splits=[], partition="stream",
        decode=decode.to_dict(), source_info=stream.info)
    check_columns(plan)
    stream.properties = split_properties({**stream.properties, **registry})[0]
    return stream, plan


def default_limit(limits: Any) -> ReadLimit:
    """Spark's ``getDefaultReadLimit`` of the Kafka source. PySpark has no composite limit:
    with both options the stream applies ``minOffsetsPerTrigger`` itself. Files are limited by
    files or bytes, as Spark's file source is."""
    if getattr(limits, "max_files", None):
        return ReadMaxFiles(limits.max_files)
    if getattr(limits, "max_bytes", None):
        return ReadMaxBytes(limits.max_bytes)
    if limits.max_offsets:
        return ReadMaxRows(limits.max_offsets)
    if limits.min_offsets:
        return ReadMinRows(limits.min_offsets)
    return ReadAllAvailable()


class PlanStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's driver asks it for offsets and a batch's input partitions (in one long-lived
    Python worker); executors get a copy without the stream and read the partitions
    (``read``). A bad option is raised from the first call, not from ``__init__``: PySpark's
    streaming worker would report its own UnboundLocalError instead."""

    def __init__(self, kind: str, options: dict[str, str]) -> None:
        from ..errors import StreamsliceError
        from .plan_options import parse_mode
        self.kind, self.options = kind, options
        self.error: StreamsliceError | None = None
        self.mode: ParseMode | None = None
        self.arrow_schema: pa.Schema | None = None
        try:
            self.stream, self.plan = open_stream(options, kind)
            self.mode = parse_mode(options, self.plan)
            self.arrow_schema = dataframe_schema(self.plan, self.mode)
        except StreamsliceError as exc:
            self.error = exc
        self._reader: PlanReader | None = None
        self.properties = dict(self.stream.properties) if self.error is None else {}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "stream"}

    def _stream(self) -> Stream:
        if self.error is not None:
            raise self.error
        return self.stream

    @user_errors
    def initialOffset(self) -> JsonObject:
        return self._stream().initial_offset()

    @user_errors
    def getDefaultReadLimit(self) -> ReadLimit:
        return default_limit(self._stream().limits)

    @user_errors
    def prepareForTriggerAvailableNow(self) -> None:
        self._stream().prepare_available_now()

    @user_errors
    def latestOffset(self, start: JsonObject, limit: ReadLimit) -> JsonObject:
        return self._stream().latest_offset(start, isinstance(limit, ReadAllAvailable))

    def reportLatestOffset(self) -> JsonObject | None:
        return self._stream().report_latest()

    @user_errors
    def partitions(self, start: JsonObject, end: JsonObject) -> list[SplitPartition]:
        return [SplitPartition([(0, split.to_dict())])
                for split in self._stream().batch_splits(start, end)]

    def read(self, partition: Any) -> Iterator[Any]:
        if self._reader is None:
            self._reader = PlanReader(self.plan, self.options, self.mode, self.arrow_schema)
            # client properties a stream's own option names give (Kinesis' awsAccessKeyId)
            self._reader.properties = {**self.properties, **self._reader.properties}
        return self._reader.read(partition)

    def commit(self, end: JsonObject) -> None:
        """Spark keeps the offsets; the source has nothing to acknowledge."""

    def stop(self) -> None:
        if self.error is None:
            self.stream.close()
