"""Kinesis Enhanced Fan-Out consumers registered and deregistered as Airflow tasks (the
Kinesis source's lifecycle tasks)."""
from __future__ import annotations

import logging
from typing import Any

from ..config import load_pipeline
from ..kinesis.client import make_client
from ..kinesis.consumers import deregister, register, run_consumer_name, sweep
from ..kinesis.planner import stream_names
from .errors import operator_errors
from .hooks import source_properties

log = logging.getLogger("streamslice")


def consumer_name(source: Any, run_id: str) -> str:
    if source.efo_registration == "per_run":
        return run_consumer_name(source.efo_consumer_name, run_id)
    return str(source.efo_consumer_name)


def _client_and_streams(cfg):
    client = make_client(source_properties(cfg.source))
    return client, [stream_names(client, ref) for ref in cfg.source.streams]


def efo_sweep_task(pipeline_file: str, **context: Any) -> None:
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        for name, arn in streams:
            gone = sweep(client, arn, cfg.source.efo_consumer_name,
                         cfg.source.efo_sweep_after_ms / 1000)
            for consumer in gone:
                log.warning("Deregistered leftover consumer %s on %s", consumer, name)


def efo_register_task(pipeline_file: str, **context: Any) -> dict[str, str]:
    """Setup: register (or reuse) the run's consumer on every stream, wait until ACTIVE, and
    hand the ARNs on through XCom."""
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        name = consumer_name(cfg.source, context["run_id"])
        arns: dict[str, str] = {}
        try:
            for stream, stream_arn in streams:
                arns[stream] = register(client, stream_arn, name)
                log.info("Consumer %s is ACTIVE on %s: %s", name, stream, arns[stream])
        except Exception:
            # A failed setup gets no teardown: undo what this task registered (per_run only;
            # a kept consumer is meant to stay).
            if cfg.source.efo_registration == "per_run":
                for stream, stream_arn in streams:
                    if stream in arns:
                        deregister(client, stream_arn, name)
                        log.warning("Deregistered %s from %s after the failed setup", name,
                                    stream)
            raise
        return arns


def efo_deregister_task(pipeline_file: str, **context: Any) -> None:
    """Teardown (runs even when the read failed): deregister the run's consumer and wait until
    it is gone."""
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        name = consumer_name(cfg.source, context["run_id"])
        for stream, stream_arn in streams:
            if deregister(client, stream_arn, name):
                log.info("Consumer %s deregistered from %s", name, stream)
