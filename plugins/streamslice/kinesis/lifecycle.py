"""The Kinesis source's lifecycle tasks (``Source.lifecycle_tasks``): Enhanced Fan-Out
consumers swept, registered and deregistered around a run. The Airflow glue runs them as
setup and teardown tasks; any other driver calls them the same way (``sources.call``)."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from .client import Backoff, make_client
from .consumers import deregister, register, run_consumer_name, sweep
from .planner import stream_names

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..sources import LifecycleRun, PageSection
    from .source import KinesisSource

log = logging.getLogger("streamslice")


def consumer_name(source: KinesisSource, run_id: str) -> str:
    if source.efo_registration == "per_run":
        return run_consumer_name(source.efo_consumer_name, run_id)
    return str(source.efo_consumer_name)


def _streams(source: KinesisSource, properties: dict[str, Any],
             backoff: Backoff | None = None) -> tuple[Any, list[Any]]:
    client = make_client(properties)
    return client, [stream_names(client, ref, backoff) for ref in source.streams]


def sweep_consumers(source: KinesisSource, run: LifecycleRun) -> None:
    """Before setup (per_run): deregister consumers that crashed runs left behind."""
    client, streams = _streams(source, run.properties())
    for name, arn in streams:
        for consumer in sweep(client, arn, source.efo_consumer_name,
                              source.efo_sweep_after_ms / 1000):
            log.warning("Deregistered leftover consumer %s on %s", consumer, name)


def register_consumers(source: KinesisSource, run: LifecycleRun) -> dict[str, str]:
    """Setup: register (or reuse) the run's consumer on every stream, wait until ACTIVE, and
    return the ARNs by stream (the readers' ``consumer_arns``)."""
    client, streams = _streams(source, run.properties())
    name = consumer_name(source, run.run_id)
    arns: dict[str, str] = {}
    try:
        for stream, stream_arn in streams:
            arns[stream] = register(client, stream_arn, name)
            log.info("Consumer %s is ACTIVE on %s: %s", name, stream, arns[stream])
    except Exception:
        # A failed setup gets no teardown: undo what this task registered (per_run only; a
        # kept consumer is meant to stay).
        if source.efo_registration == "per_run":
            for stream, stream_arn in streams:
                if stream in arns:
                    deregister(client, stream_arn, name)
                    log.warning("Deregistered %s from %s after the failed setup", name, stream)
        raise
    return arns


def deregister_consumers(source: KinesisSource, run: LifecycleRun) -> None:
    """Teardown (also after a failed read): deregister the run's consumer, wait until gone."""
    client, streams = _streams(source, run.properties())
    name = consumer_name(source, run.run_id)
    for stream, stream_arn in streams:
        if deregister(client, stream_arn, name):
            log.info("Consumer %s deregistered from %s", name, stream)


def consumers_section(source: KinesisSource,
                      properties: Callable[[], dict[str, Any]]) -> PageSection:
    """The streams' registered EFO consumers for the pipeline's page, asked of Kinesis with
    the pipeline's own connection (only names, states and times are shown)."""
    from ..sources import PageSection
    from ..timeutil import iso
    title, columns = "Enhanced fan-out consumers", ("Consumer", "Status", "Registered", "Age")
    try:  # one try per call, no retries: the page must not hang
        client, streams = _streams(source, properties(), Backoff(max_retries=0))
        now, rows = time.time(), []
        for name, arn in streams:
            listed = client.list_stream_consumers(StreamARN=arn).get("Consumers", [])
            for c in listed:
                created = c["ConsumerCreationTimestamp"].timestamp()
                rows.append((f"{c['ConsumerName']} ({name})", str(c["ConsumerStatus"]),
                             iso(int(created * 1000))[:19].replace("T", " "),
                             f"{int((now - created) // 60)} min"))
    except Exception as exc:  # the page still shows everything else: one sentence here
        what = (str(exc).splitlines() or [type(exc).__name__])[0][:240].rstrip(". ")
        return PageSection(title, columns, error=(
            f"Could not list the stream's consumers: {what}. Check that the stream can be "
            "reached with the pipeline's connection (region, endpoint, credentials, network), "
            "then reload this page."))
    return PageSection(title, columns, tuple(rows), empty="No consumers registered.")
