"""The read job: plan → Spark data source → staged dataset. Used in-process (``local``) and by
``bounded_read`` under spark-submit."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..commit.publishers import staged_constants
from ..errors import SourceError, StreamsliceError, faults, from_text
from ..reading.sink import parquet_codec, staged_file
from ..reading.staging import Staging
from ..sources import source_class

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..planning.plan import ReadPlan
    from ..sources import Properties


def run_read(spark: Any, plan: ReadPlan[Any], staging_uri: str, *,
             properties: Properties | None = None,
             options: dict[str, Any] | None = None, direct: bool = True,
             pack: bool = True, ahead: Sequence[tuple[ReadPlan[Any], str]] = ()) -> str:
    """Read every split of ``plan`` and write the records under ``<staging_uri>/data`` in the
    plan's output format. Parquet in a codec pyarrow has is written by the readers themselves,
    one file per split (``reading.sink``): Spark runs the tasks and gets no rows, and a task
    reads several small splits (``planning.packing``; ``pack=False``: one split a task).
    Otherwise, or with ``direct=False``, the readers return the records and Spark writes
    them. ``ahead``: other plans of the same pipeline (``reading.ahead``), each with its own
    staging area, read in the same job; only on the readers' own write path."""
    staging = Staging(staging_uri, plan.output.auth if plan.output else None)
    reader = (spark.read.format(f"streamslice-{plan.source}").option("plan", plan.to_json())
              .option("staging", staging_uri))
    if options:
        reader = reader.option("readOptions", json.dumps(options))
    if faults.current():
        reader = reader.option("injectFault", faults.current())
    prefix = source_class(plan.source).option_prefix
    for key, value in (properties or {}).items():
        reader = reader.option(prefix + key, str(value))
    fmt, compression = staged_file(plan)
    codec = parquet_codec(fmt, compression) if direct else None
    if ahead and not codec:
        raise ValueError("reading ahead needs the readers' own Parquet write path")
    if codec:
        reader = reader.option("directWrite", codec).option("packSplits", str(pack).lower())
        slots = _parallelism(spark)
        if slots:
            reader = reader.option("taskSlots", str(slots))
        if ahead:  # one read of every plan, their splits packed into the same tasks
            reader = reader.option("ahead", json.dumps(
                [{"plan": other.to_json(), "staging": uri} for other, uri in ahead]))
        # what mode("overwrite") does on Spark's path, in every staging area read into
        for read, uri in ((plan, staging_uri), *ahead):
            Staging(uri, read.output.auth if read.output else None).clear_data()
    try:
        df = reader.load()
        if codec:
            df.write.format("noop").mode("overwrite").save()  # runs the tasks, writes nothing
            return staging.data_uri
        for name, value in staged_constants(plan).items():  # tables partition by it
            df = df.withColumn(name, _functions(spark).lit(value))
        (df.write.mode("overwrite").format(fmt).option("compression", compression)
         .save(staging.data_uri))
    except Exception as exc:  # noqa: BLE001 - Spark wraps executor errors: unwrap names ours
        raise unwrap(exc) from None
    return staging.data_uri


def _parallelism(spark: Any) -> int | None:
    """How many tasks the session runs at once, as Spark's file sources count them for packing
    (``spark.sql.leafNodeDefaultParallelism``, else ``defaultParallelism``), or None where it
    does not say: a Spark Connect client has no SparkContext, so the data source counts the
    cores where it plans, on the server's driver."""
    for key in ("spark.sql.leafNodeDefaultParallelism", "spark.default.parallelism"):
        value = spark.conf.get(key, None)
        if value:
            return int(value)
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect: [JVM_ATTRIBUTE_NOT_SUPPORTED]
        return None


def _functions(spark: Any) -> Any:
    """``pyspark.sql.functions`` for the session's kind: Spark Connect has its own, and which
    one the shared module hands out depends on the process, not on the session."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions
        return functions
    from pyspark.sql import functions as classic
    return classic


# The server is down, or came back without the session or the operation (a restart).
_CONNECT_GONE = re.compile(r"StatusCode\.UNAVAILABLE|failed to connect to all addresses|"
                           r"INVALID_HANDLE\.(SESSION_CHANGED|SESSION_NOT_FOUND|"
                           r"OPERATION_NOT_FOUND)|RETRIES_EXCEEDED")
_GRPC_DETAILS = re.compile(r'details = "([^"]*)"')
_JVM_GONE = re.compile(r"Answer from Java side is empty|Error while sending or receiving|"
                       r"\[Errno 111\] Connection refused|Py4JNetworkError")
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Fault)): (.+)$", re.M)


def unwrap(exc: BaseException) -> StreamsliceError:
    """The streamslice error inside a Spark/Py4J exception, or a short StreamsliceError."""
    if isinstance(exc, StreamsliceError):
        return exc
    text = str(exc)
    ours = from_text(text)
    if ours is not None:
        return ours
    if _CONNECT_GONE.search(text):
        detail = _GRPC_DETAILS.search(text)
        first = detail.group(1) if detail else text.splitlines()[0] if text else ""
        return SourceError("the Spark Connect server cannot be reached or was restarted: "
                           f"{first[:200]}")
    if _JVM_GONE.search(text) or type(exc).__name__.startswith("Py4JNetwork"):
        return SourceError("the Spark JVM is gone (killed, or out of memory?): "
                           f"{text.splitlines()[0][:200] if text else type(exc).__name__}")
    python = [m for m in _PYTHON_ERROR.findall(text)
              if not m[0].startswith(("org.", "java.", "py4j.", "scala."))]
    if python:
        name, message = python[0]
        return StreamsliceError(f"Spark job failed: {name.rsplit('.', 1)[-1]}: {message[:500]}")
    first = next((ln for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return StreamsliceError(f"Spark job failed: {first[:500]}")
