"""Where the read job runs: the pipeline's runner (``streamslice.runners``: in-process on
``local[*]`` by default, a Spark Connect server, spark-submit to a cluster, or EMR
Serverless), handed the client properties without their secrets. Every runner passes the
same arguments (``reading.job.ReadJob``)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..config.secrets import SECRETS_FILE, private_file, split_secrets
from ..errors import ConfigError
from ..runners import RunRequest
from ..sources import ambient_secrets

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..config.pipeline import PipelineConfig
    from ..planning.plan import ReadPlan
    from ..sources import Properties

log = logging.getLogger("streamslice")


def run_spark_read(cfg: PipelineConfig, plan: ReadPlan[Any], staging_uri: str,
                   properties: Properties,
                   options: dict[str, Any], started: Any = None,
                   ahead: Sequence[tuple[ReadPlan[Any], str]] = ()) -> None:
    """Secret properties never become Spark options or job arguments (``config.secrets``): local
    and spark-submit reads get them through a private file; a Spark Connect server and EMR
    Serverless read with their own identity (``Runner.own_identity``). EMR Serverless defers
    (``TaskDeferred``) once its job run is started, and tells ``started`` which run that is."""
    public, secrets = split_secrets(properties)
    if cfg.spark.own_identity:
        _own_identity(cfg, cfg.spark.own_identity, secrets,
                      assumes_role=bool(public.get("role_arn")))
        secrets = {}
    with private_file(secrets) as path:
        if path:
            public = {**public, SECRETS_FILE: path}
        _run(cfg, plan, staging_uri, public, options, path, started, ahead)


def _own_identity(cfg: PipelineConfig, where: str, secrets: Properties,
                  assumes_role: bool) -> None:
    other = sorted(k for k in secrets if k not in ambient_secrets(cfg.source))
    if other:
        raise ConfigError(
            f"spark.runner {cfg.spark.kind}: the read needs {', '.join(other)} from "
            f"{cfg.source.kind}.conn_id {cfg.source.conn_id!r}, and secrets are never sent to "
            f"{where}; use a credential the server has itself (Amazon MSK: auth msk_iam) or "
            "runner local / spark-submit", field="spark.runner")
    if secrets:
        log.info("The connection's static AWS keys stay in Airflow: %s reads with its own "
                 "AWS identity%s.", where,
                 " and assumes the pipeline's role" if assumes_role else "")


def _run(cfg: PipelineConfig, plan: ReadPlan[Any], staging_uri: str, properties: Properties,
         options: dict[str, Any], secrets_path: str | None, started: Any = None,
         ahead: Sequence[tuple[ReadPlan[Any], str]] = ()) -> None:
    cfg.spark.run(RunRequest(cfg, plan, staging_uri, properties, options, secrets_path,
                             started, tuple(ahead)))
