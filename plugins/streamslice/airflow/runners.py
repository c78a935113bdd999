"""Where the read job runs: in-process on ``local[*]`` (the default), spark-submit to a cluster
(``spark.runner: spark-submit`` with ``spark.master: spark://…``, ``yarn``, ``k8s://…``), or
EMR Serverless. Every runner passes the same arguments (``reading.job.ReadJob``)."""
from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("streamslice")


def run_spark_read(cfg, plan, staging_uri: str, properties: dict[str, Any],
                   options: dict[str, Any]) -> None:
    if cfg.spark.runner == "local":
        from ..spark.job import run_read
        from ..spark.session import spark_session
        spark = spark_session(master=cfg.spark.master, conf=cfg.spark.conf)
        run_read(spark, plan, staging_uri, properties=properties, options=options)
    elif cfg.spark.runner == "spark-submit":
        from ..spark.submit import submit
        submit(plan, staging_uri, master=cfg.spark.master, properties=properties,
               conf=cfg.spark.conf, options=options, log=log.info)
    else:
        from .emr import run_emr_serverless
        run_emr_serverless(cfg, plan, staging_uri, properties, options)
