"""The Kinesis source's lifecycle tasks (``HasLifecycleTasks.lifecycle_tasks``): Enhanced Fan-Out
consumers swept, registered and deregistered around a run. The Airflow glue runs them as
setup and teardown tasks; any other driver calls them the same way (``sources.call``)."""
from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, StreamsliceError
from .client import Backoff, call, make_client
from .consumers import deregister, is_run_consumer, register, run_consumer_name, sweep
from .planner import stream_names

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..sources import LifecycleRun, PageAction, PageSection, Properties
    from .source import KinesisSource

log = logging.getLogger("streamslice")
NO_RETRY = Backoff(max_retries=0)  # what a page asks: one try, it must not hang


def _prefix(source: KinesisSource) -> str:
    if not source.efo_consumer_name:
        raise ConfigError("kinesis.efo.consumer_name is needed to register consumers")
    return source.efo_consumer_name


def consumer_name(source: KinesisSource, run_id: str) -> str:
    if source.efo_registration == "per_run":
        return run_consumer_name(_prefix(source), run_id)
    return _prefix(source)


def _in_use(source: KinesisSource, running: frozenset[str]) -> set[str]:
    """The consumers of this pipeline's queued or running runs."""
    return {consumer_name(source, r) for r in running} if source.efo_consumer_name else set()


def _streams(source: KinesisSource, properties: Properties,
             backoff: Backoff | None = None) -> tuple[Any, list[Any]]:
    client = make_client(properties)
    return client, [stream_names(client, ref, backoff) for ref in source.streams]


def sweep_consumers(source: KinesisSource, run: LifecycleRun) -> None:
    """Before setup (per_run): deregister consumers that crashed runs left behind."""
    client, streams = _streams(source, run.properties())
    for name, arn in streams:
        for consumer in sweep(client, arn, _prefix(source),
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


def consumers_section(source: KinesisSource, properties: Callable[[], Properties],
                      running: frozenset[str] = frozenset()) -> PageSection:
    """The streams' registered EFO consumers for the pipeline's page, asked of Kinesis with
    the pipeline's own connection (only names, states and times are shown), each of this
    pipeline's leaked per-run consumers with a button to deregister it."""
    from ..sources import PageSection
    from ..timestamps import iso
    title, columns = "Enhanced fan-out consumers", ("Consumer", "Status", "Registered", "Age")
    in_use = _in_use(source, running)
    try:  # one try per call, no retries: the page must not hang
        client, streams = _streams(source, properties(), NO_RETRY)
        now, rows, actions = time.time(), [], []
        for name, arn in streams:
            listed = client.list_stream_consumers(StreamARN=arn).get("Consumers", [])
            for c in listed:
                created = c["ConsumerCreationTimestamp"].timestamp()
                rows.append((f"{c['ConsumerName']} ({name})", str(c["ConsumerStatus"]),
                             iso(int(created * 1000))[:19].replace("T", " "),
                             f"{int((now - created) // 60)} min"))
                actions.append(leak_action(source, name, c["ConsumerName"],
                                           str(c["ConsumerStatus"]), in_use))
    except Exception as exc:  # noqa: BLE001 - the page still shows everything else
        what = (str(exc).splitlines() or [type(exc).__name__])[0][:240].rstrip(". ")
        return PageSection(title, columns, error=(
            f"Could not list the stream's consumers: {what}. Check that the stream can be "
            "reached with the pipeline's connection (region, endpoint, credentials, network), "
            "then reload this page."))
    return PageSection(title, columns, tuple(rows), empty="No consumers registered.",
                       actions=tuple(actions))


def leak_action(source: KinesisSource, stream: str, consumer: str, status: str,
                in_use: set[str]) -> PageAction | None:
    """A Deregister button for one of this pipeline's per-run consumers (``<name>-<hash>``),
    pressable when no queued or running run uses it: a run that ended without its teardown
    (a killed worker) left it, and it counts against the stream's 20. Another application's
    consumer, or one kept on purpose (registration ``keep``), gets none."""
    from ..sources import PageAction
    if source.efo_registration != "per_run" or not source.efo_consumer_name or \
            not is_run_consumer(source.efo_consumer_name, consumer):
        return None
    why = None
    if consumer in in_use:
        why = "A queued or running run of this pipeline uses it; its teardown deregisters it."
    elif status != "ACTIVE":
        doing = "creating" if status == "CREATING" else "deleting"
        why = f"It is {status}: Kinesis is still {doing} it."
    return PageAction("deregister", json.dumps({"stream": stream, "consumer": consumer}),
                      "Deregister", f"Deregister the consumer {consumer} from stream {stream}. "
                      "No queued or running run of this pipeline uses it: a run that ended "
                      "without its teardown left it behind, and it counts against the stream's "
                      "limit of 20 consumers.", why)


def deregister_leaked(source: KinesisSource, target: str,
                      properties: Callable[[], Properties], running: frozenset[str]) -> str:
    """The page's Deregister: checked again here (the page may be old, the browser is not
    trusted), then one DeregisterStreamConsumer call; Kinesis deletes it within seconds."""
    try:
        wanted = json.loads(target)
        stream, consumer = str(wanted["stream"]), str(wanted["consumer"])
    except (ValueError, TypeError, KeyError):
        raise StreamsliceError(f"not a consumer of this pipeline: {target[:100]!r}") from None
    in_use = _in_use(source, running)
    client, streams = _streams(source, properties(), NO_RETRY)
    arn = dict(streams).get(stream)
    if arn is None or leak_action(source, stream, consumer, "ACTIVE", in_use) is None:
        raise StreamsliceError(f"{consumer} on {stream} is not one of this pipeline's per-run "
                               "consumers: it is not this page's to deregister")
    if consumer in in_use:
        raise StreamsliceError(f"{consumer} is in use by a queued or running run of this "
                               "pipeline; its teardown deregisters it")
    call(client.deregister_stream_consumer, "DeregisterStreamConsumer", NO_RETRY,
         StreamARN=arn, ConsumerName=consumer)
    log.warning("Deregistered leaked consumer %s from %s (from the Streamslice page)",
                consumer, stream)
    return f"Kinesis is deregistering {consumer} from {stream}; it is gone within seconds."
