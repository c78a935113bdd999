"""The batch read of a plan's splits (``PlanReader``: ``DataSourceReader`` over a source's
readers and decoders), shared by ``spark.read`` (``datasource``) and each micro-batch of
``spark.readStream`` (``stream``), and what both need: a streamslice error met while Spark plans
the read reaches the user as its one line (``user_errors``)."""
from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.datasource import DataSourceReader, InputPartition

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import pyarrow as pa

    from ..planning.plan import ReadPlan
    from ..reading.loop import SplitReader
    from ..reading.malformed import Malformed, ParseMode
    from ..reading.sink import ParquetSink
    from ..records import JsonObject
    from ..sources import Properties, ReaderFactory, ReadRequest


F = TypeVar("F", bound="Callable[..., Any]")
_HIDE = "SPARK_HIDE_TRACEBACK"


def user_errors(method: F) -> F:
    """A streamslice error met while Spark plans the read (a bad option, a topic that is not
    there) reaches the user as its one line, as Spark's own option errors do, not under a
    Python traceback: PySpark's worker prints only the exception when SPARK_HIDE_TRACEBACK
    is set in its environment. Set for that error only: the next call in the same planner
    worker starts without it, so an unexpected error keeps its traceback."""
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        _show_traceback()
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            from streamslice.errors import StreamsliceError
            if isinstance(exc, StreamsliceError):
                _hide_traceback()
            raise
    return run  # type: ignore[return-value]


def _hide_traceback() -> None:
    """PySpark's worker prints only the exception it is about to report (unless the user
    set SPARK_HIDE_TRACEBACK themselves, which stays as it is)."""
    if _HIDE not in os.environ:
        os.environ[_HIDE] = "streamslice"


def _show_traceback() -> None:
    if os.environ.get(_HIDE) == "streamslice":
        del os.environ[_HIDE]


class SplitPartition(InputPartition):
    """The splits one Spark task reads, in order, each with the index of its plan (``None``
    for the split: a plan without splits)."""

    def __init__(self, splits: list[tuple[int, JsonObject | None]]) -> None:
        super().__init__(splits)


def dataframe_schema(plan: ReadPlan[Any], mode: ParseMode | None) -> pa.Schema:
    """The source's columns for the plan's decoding, and the corrupt-record column where
    ``mode`` wants one."""
    import pyarrow as pa

    from streamslice.reading.decode import Decoder
    from streamslice.sources import source_class
    decoder, readers = Decoder.from_dict(plan.decode), source_class(plan.source).readers()
    records = readers.record_schema(decoder, plan)
    if mode is None:
        return records
    can_fail = "raw" != decoder.value_format_name or "raw" != decoder.key_format_name
    return mode.schema(records, [pa.field(n, pa.binary()) for n in readers.raw_columns], can_fail)


class PlanReader(DataSourceReader):
    """Reads a plan's splits; on the direct write path, also the plans of ``ahead`` (a JSON
    list of ``{"plan", "staging"}``: other intervals of the same pipeline, each into its own
    staging area, ``reading.ahead``), their splits packed into the same tasks."""

    def __init__(self, plan: ReadPlan[Any], options: dict[str, str], mode: ParseMode | None = None,
                 schema: pa.Schema | None = None) -> None:
        from streamslice.config.data_source_options import client_properties
        from streamslice.sources import source_class
        options = {k.lower(): v for k, v in options.items()}
        self.kind = plan.source
        self.properties: Properties = dict(client_properties(
            options, source_class(plan.source).option_prefix))
        # A schema registry's properties, given as options of their own by a Spark user
        self.properties.update(client_properties(options, "schema.registry.", keep=True))
        self.read_options = {**json.loads(options.get("readoptions") or "{}"),
                             **source_class(plan.source).readers().spark_read_options(options)}
        self.staging, self.fault = options.get("staging"), options.get("injectfault")
        self.codec: str = (options.get("directwrite") or "") if self.staging else ""
        self.pack = bool(self.codec) and options.get("packsplits", "true") != "false"
        self.slots = int(options.get("taskslots") or os.cpu_count() or 1)
        self.mode, self.schema = (mode, schema) if not self.staging else (None, None)
        ahead = json.loads(options.get("ahead") or "[]") if self.codec else []
        # (plan JSON, staging URI, its splits) of each plan read: this one first
        self.plans: list[tuple[str, str | None, list[JsonObject]]] = [
            (plan.to_json(), self.staging, [s.to_dict() for s in plan.splits])]
        for other in ahead:
            from streamslice.sources import read_plan
            self.plans.append((other["plan"], other["staging"],
                               [s.to_dict() for s in read_plan(other["plan"]).splits]))

    @user_errors
    def partitions(self) -> list[SplitPartition]:
        """Spark's driver plans the read here: the source resolves and checks what it binds
        once per read (``ReaderFactory.resolve_splits``), so a bad range fails now, as one line,
        and the tasks read the splits as resolved. An input partition's items are (plan index,
        split); (plan index, None) stands for a plan without splits."""
        from streamslice.sources import source_class
        source = source_class(self.kind)
        readers, serializer = source.readers(), source.serializer()
        items: list[tuple[int, JsonObject | None]] = []
        for index, (_, _, splits) in enumerate(self.plans):
            if not splits:
                items.append((index, None))
                continue
            items += [(index, s.to_dict()) for s in readers.resolve_splits(
                [serializer.from_dict(s) for s in splits], self._properties)]
        if not self.pack:
            return [SplitPartition([item]) for item in items]
        from streamslice.planning.packing import pack_splits
        sizes = [serializer.from_dict(s).size if s else 0 for _, s in items]
        return [SplitPartition([items[i] for i in group])
                for group in pack_splits(sizes, self.slots)]

    def _properties(self) -> Properties:
        from streamslice.config.secrets import with_secrets
        from streamslice.schema_registry.base import split_properties
        return split_properties(with_secrets(self.properties, _spark_file))[0]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        _show_traceback()  # a reused worker starts each task with tracebacks shown
        from streamslice.errors import StreamsliceError
        from streamslice.reading.malformed import Malformed
        from streamslice.sources import source_class
        source = source_class(self.kind)
        readers, serializer = source.readers(), source.serializer()
        requests: dict[int, ReadRequest] = {}
        try:
            for index, value in partition.value:
                request = requests.get(index) or self._request(index)
                requests[index] = request
                if value is None:  # no splits: Spark's writer still stages the schema
                    if self.codec:
                        self._sink(readers, request, index, 0).commit()
                    continue
                split = serializer.from_dict(value)
                reader = readers.open_reader(split, request)
                if self.codec:
                    reader.sink = self._sink(readers, request, index, split.id)
                if self.mode is None:
                    yield from reader.batches()
                else:
                    assert self.schema is not None
                    yield from _with_malformed(reader, Malformed(self.mode, self.schema,
                                                                 split.key))
        except StreamsliceError as exc:  # crosses to the driver as one line with its kind,
            _hide_traceback()  # without the worker's traceback in the task's failure
            raise RuntimeError(exc.to_line()) from None

    def _request(self, index: int) -> ReadRequest:
        """How plan ``index`` is read: its plan, decoder and staging area."""
        from streamslice.config.secrets import with_secrets
        from streamslice.reading.decode import Decoder
        from streamslice.reading.staging import Staging
        from streamslice.schema_registry.base import split_properties
        from streamslice.sources import ReadRequest, read_plan
        plan_json, staging, _ = self.plans[index]
        plan = read_plan(plan_json)
        props = with_secrets(self.properties, _spark_file)
        decoder = Decoder.from_dict(plan.decode, props)
        if self.mode is not None:  # records that do not decode are the mode's to handle
            decoder.on_error = "dead_letter"
        return ReadRequest(plan=plan, properties=split_properties(props)[0], decoder=decoder,
                           staging=Staging(staging, plan.output.auth if plan.output else None)
                           if staging else None,
                           fault=self.fault, options=self.read_options)

    def _sink(self, readers: ReaderFactory[Any], request: ReadRequest, index: int,
              split_id: int) -> ParquetSink:
        """Where a split's records go on the direct write path. The plan's first split writes
        a file even without records, as Spark's writer does for its first task."""
        from streamslice.commit.publishers import staged_constants
        from streamslice.reading.sink import ParquetSink
        splits = self.plans[index][2]
        first = splits[0]["id"] if splits else 0
        assert request.staging is not None  # the direct write path needs a staging area
        return ParquetSink(request.staging, split_id,
                           readers.record_schema(request.decoder, request.plan), self.codec,
                           constants=staged_constants(request.plan), keep_empty=split_id == first)


def _with_malformed(reader: SplitReader[Any], malformed: Malformed) -> Iterator[Any]:
    """A split's batches, and its records that did not decode as ``malformed`` says; then
    the split's count of them in a log line."""
    for batch in reader.batches():
        yield malformed.rows(batch)
        corrupt = malformed.dead(reader.take_dead_letters())
        if corrupt is not None:
            yield corrupt
    corrupt = malformed.dead(reader.take_dead_letters())  # batches without a decoded record
    if corrupt is not None:
        yield corrupt
    malformed.log(reader.stats.summary.scanned)


def _spark_file(name: str) -> str | None:
    """A file spark-submit shipped to this executor (``--files``), if there is one."""
    from pyspark import SparkFiles
    try:
        return SparkFiles.get(name)
    except Exception:  # noqa: BLE001 - no SparkFiles root in this worker
        return None
