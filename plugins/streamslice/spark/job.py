"""The read job: plan → Spark data source → staged dataset. Used in-process (``local``) and by
``jobs/bounded_read.py`` under spark-submit."""
import json
import re

from .. import faults
from ..errors import StreamsliceError
from ..staging import Staging

FORMATS = {"kafka": "streamslice-kafka", "kinesis": "streamslice-kinesis"}


def run_read(spark, plan, staging_uri, *, properties=None, client=None, output_format="parquet",
             compression="snappy", consumer_arns=None):
    """Read every split of ``plan`` and write the records under ``<staging_uri>/data``."""
    reader = (spark.read.format(FORMATS[plan.source]).option("plan", plan.to_json())
              .option("staging", staging_uri))
    if client:
        reader = reader.option("client", client)
    if consumer_arns:
        reader = reader.option("consumerArns", json.dumps(consumer_arns))
    if faults.current():
        reader = reader.option("injectFault", faults.current())
    prefix = "kafka." if plan.source == "kafka" else "aws."
    for key, value in (properties or {}).items():
        reader = reader.option(prefix + key, str(value))
    try:
        df = reader.load()
        (df.write.mode("overwrite").format(output_format).option("compression", compression)
         .save(Staging(staging_uri).data_uri))
    except Exception as exc:  # Spark wraps executor errors; surface ours with their message
        raise unwrap(exc) from None
    return Staging(staging_uri).data_uri


_OURS = re.compile(r"streamslice\.errors\.(\w+): (.+?)(?:\n|$)")
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Fault)): (.+)$", re.M)


def unwrap(exc):
    """The streamslice error inside a Spark/Py4J exception, or a short StreamsliceError."""
    from .. import errors
    text = str(exc)
    found = _OURS.findall(text)
    if found:
        name, message = found[-1]
        cls = getattr(errors, name, StreamsliceError)
        try:
            return cls(message.strip())
        except TypeError:
            return StreamsliceError(message.strip())
    python = [m for m in _PYTHON_ERROR.findall(text)
              if not m[0].startswith(("org.", "java.", "py4j.", "scala."))]
    if python:
        name, message = python[0]
        return StreamsliceError(f"Spark job failed: {name.rsplit('.', 1)[-1]}: {message[:500]}")
    first = next((ln for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return StreamsliceError(f"Spark job failed: {first[:500]}")


def run_spark_job_inprocess(cfg, plan, staging_uri, properties, consumer_arns=None):
    from .session import spark_session
    spark = spark_session(master=cfg.spark.master, conf=cfg.spark.conf)
    return run_read(spark, plan, staging_uri, properties=properties,
                    client=getattr(cfg.source, "client", None),
                    output_format=cfg.output.format, compression=cfg.output.compression,
                    consumer_arns=consumer_arns)
