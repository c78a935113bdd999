"""Where the read job runs: in-process on ``local[*]`` (the default), on a long-running Spark
Connect server (``spark.runner: connect`` with ``spark.remote: sc://…``), spark-submit to a
cluster (``spark.runner: spark-submit`` with ``spark.master: spark://…``, ``yarn``,
``k8s://…``), or EMR Serverless. Every runner passes the same arguments
(``reading.job.ReadJob``)."""
from __future__ import annotations

import logging
import os
from typing import Any

from ..errors import ConfigError

log = logging.getLogger("streamslice")


def run_spark_read(cfg, plan, staging_uri: str, properties: dict[str, Any],
                   options: dict[str, Any]) -> None:
    if cfg.spark.runner == "local":
        if os.environ.get("SPARK_REMOTE"):
            raise ConfigError("SPARK_REMOTE is set, so PySpark would not run local[*]: use "
                              "runner: connect, or unset it", field="spark.runner")
        from ..spark.job import run_read, unwrap
        from ..spark.session import spark_session
        try:
            spark = spark_session(master=cfg.spark.master, conf=cfg.spark.conf)
        except Exception as exc:  # a JVM that cannot start: one line, not Py4J's traceback
            raise unwrap(exc) from None
        run_read(spark, plan, staging_uri, properties=properties, options=options)
    elif cfg.spark.runner == "connect":
        from ..spark.connect import run_connect_read
        run_connect_read(cfg.spark.remote, plan, staging_uri, conf=cfg.spark.conf,
                         properties=properties, options=options)
    elif cfg.spark.runner == "spark-submit":
        from ..spark.submit import submit
        submit(plan, staging_uri, master=cfg.spark.master, properties=properties,
               conf=cfg.spark.conf, options=options, log=log.info)
    else:
        from .emr import run_emr_serverless
        run_emr_serverless(cfg, plan, staging_uri, properties, options)
