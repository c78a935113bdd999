"""Where the read job runs: in-process on ``local[*]`` (the default), on a long-running Spark
Connect server (``spark.runner: connect`` with ``spark.remote: sc://…``), spark-submit to a
cluster (``spark.runner: spark-submit`` with ``spark.master: spark://…``, ``yarn``,
``k8s://…``), or EMR Serverless. Every runner passes the same arguments
(``reading.job.ReadJob``)."""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..secrets import SECRETS_FILE, private_file, split_secrets

if TYPE_CHECKING:
    from ..config.pipeline import PipelineConfig
    from ..planning.plan import ReadPlan

log = logging.getLogger("streamslice")


def run_spark_read(cfg: PipelineConfig, plan: ReadPlan, staging_uri: str,
                   properties: dict[str, Any],
                   options: dict[str, Any], started: Any = None) -> None:
    """Secret properties never become Spark options or job arguments (``secrets``): local
    and spark-submit reads get them through a private file; a Spark Connect server and EMR
    Serverless read with their own identity. EMR Serverless defers (``TaskDeferred``) once
    its job run is started, and tells ``started`` which run that is."""
    public, secrets = split_secrets(properties)
    if cfg.spark.runner in ("connect", "emr-serverless"):
        _own_identity(cfg, secrets, assumes_role=bool(public.get("role_arn")))
        secrets = {}
    with private_file(secrets) as path:
        if path:
            public = {**public, SECRETS_FILE: path}
        _run(cfg, plan, staging_uri, public, options, path, started)


def _own_identity(cfg: PipelineConfig, secrets: dict[str, Any], assumes_role: bool) -> None:
    where = ("the Spark Connect server" if cfg.spark.runner == "connect"
             else "EMR Serverless (its job role)")
    other = sorted(k for k in secrets if k not in cfg.source.ambient_secrets)
    if other:
        raise ConfigError(
            f"spark.runner {cfg.spark.runner}: the read needs {', '.join(other)} from "
            f"{cfg.source.kind}.conn_id {cfg.source.conn_id!r}, and secrets are never sent to "
            f"{where}; use a credential the server has itself (Amazon MSK: auth msk_iam) or "
            "runner local / spark-submit", field="spark.runner")
    if secrets:
        log.info("The connection's static AWS keys stay in Airflow: %s reads with its own "
                 "AWS identity%s.", where,
                 " and assumes the pipeline's role" if assumes_role else "")


def _run(cfg: PipelineConfig, plan: ReadPlan, staging_uri: str, properties: dict[str, Any],
         options: dict[str, Any],
         secrets_path: str | None, started: Any = None) -> None:
    if cfg.spark.runner == "local":
        if os.environ.get("SPARK_REMOTE"):
            raise ConfigError("SPARK_REMOTE is set, so PySpark would not run local[*]: use "
                              "runner: connect, or unset it", field="spark.runner")
        from ..spark.job import run_read, unwrap
        from ..spark.session import spark_session
        try:
            spark = spark_session(master=cfg.spark.master, conf=cfg.spark.conf)
        except Exception as exc:  # noqa: BLE001 - a JVM that cannot start: one line, not Py4J's traceback
            raise unwrap(exc) from None
        run_read(spark, plan, staging_uri, properties=properties, options=options)
    elif cfg.spark.runner == "connect":
        from ..spark.connect import run_connect_read
        assert cfg.spark.remote is not None  # the config requires it for runner connect
        run_connect_read(cfg.spark.remote, plan, staging_uri, conf=cfg.spark.conf,
                         properties=properties, options=options)
    elif cfg.spark.runner == "spark-submit":
        from ..spark.submit import submit
        submit(plan, staging_uri, master=cfg.spark.master, properties=properties,
               conf=cfg.spark.conf, options=options, log=log.info,
               files=[secrets_path] if secrets_path else [])
    else:
        from .emr import run_emr_serverless
        run_emr_serverless(cfg, plan, staging_uri, properties, options, started=started)
