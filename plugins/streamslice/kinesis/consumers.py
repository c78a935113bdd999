"""Enhanced Fan-Out consumer registration, as Airflow setup/teardown tasks use it.

Strategies (Flink's ``flink.stream.efo.registration``):
  ``per_run`` (Flink LAZY): register ``<name>-<run hash>`` at the start of a run, deregister at
  its end, so overlapping runs never share (or delete) each other's consumer;
  ``keep`` (Flink EAGER): register ``<name>`` if missing, never deregister;
  ``none`` (Flink NONE): the consumer ARN comes from the config; no calls.
"""
from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from ..errors import SourceError, faults
from .client import DEFAULT_BACKOFF, ApiArgs, Backoff, StreamConsumer, call, error_code

Sleep = Callable[[float], None]
Clock = Callable[[], float]

CONSUMER_LIMIT = 20  # consumers per stream
log = logging.getLogger("streamslice")


def run_consumer_name(name: str, run_id: str) -> str:
    return f"{name}-{hashlib.sha1(run_id.encode()).hexdigest()[:10]}"


def list_consumers(client: Any, stream_arn: str) -> list[StreamConsumer]:
    out: list[StreamConsumer] = []
    token = None
    while True:
        args: ApiArgs = {"StreamARN": stream_arn, "MaxResults": 100}
        if token:
            args = {"StreamARN": stream_arn, "NextToken": token, "MaxResults": 100}
        resp = call(client.list_stream_consumers, "ListStreamConsumers",
                    DEFAULT_BACKOFF["list_shards"], **args)
        out += resp.get("Consumers", [])
        token = resp.get("NextToken")
        if not token:
            return out


def register(client: Any, stream_arn: str, name: str, *,
             backoff: dict[str, Backoff] | None = None, timeout_s: float = 300,
             sleep: Sleep = time.sleep, clock: Clock = time.monotonic) -> str:
    """Register ``name`` (or reuse it) and wait until it is ACTIVE; returns the consumer ARN.

    A consumer of the same name still DELETING (the previous run's, or this run's earlier
    try: FLINK-37908) is waited out and registered anew; ResourceInUseException (a race, or
    that DELETING consumer) means: look again; LimitExceededException (5 consumers CREATING
    at once, or DescribeStreamConsumer's 20 calls a second) is retried with backoff. Only
    the deadline fails a registration that can still succeed."""
    backoff = backoff or DEFAULT_BACKOFF
    deadline = clock() + timeout_s
    existing = {c["ConsumerName"]: c for c in list_consumers(client, stream_arn)}
    if name not in existing and len(existing) >= CONSUMER_LIMIT:
        raise SourceError(
            f"stream {stream_arn} already has {len(existing)} consumers, the Kinesis limit "
            f"of {CONSUMER_LIMIT}; deregister unused ones (streamslice efo list/sweep) or use "
            "efo.registration: none with an existing consumer")
    status = existing.get(name, {}).get("ConsumerStatus")
    while True:
        if status == "DELETING":
            log.info("Consumer %s on %s is still DELETING; waiting before registering it "
                     "again", name, stream_arn)
            wait_for(client, stream_arn, name, None, backoff=backoff,
                     timeout_s=max(1.0, deadline - clock()), sleep=sleep, clock=clock)
            status = None
        if status is None:
            try:
                call(client.register_stream_consumer, "RegisterStreamConsumer",
                     backoff["register_stream_consumer"], retry_on={"LimitExceededException"},
                     passthrough=("ResourceInUseException",), sleep=sleep,
                     StreamARN=stream_arn, ConsumerName=name)
            except Exception as exc:
                if error_code(exc) != "ResourceInUseException":  # a race, or DELETING
                    raise
        faults.check("efo_register")  # registered, not yet ACTIVE
        arn = wait_for(client, stream_arn, name, "ACTIVE", backoff=backoff,
                       timeout_s=max(1.0, deadline - clock()), sleep=sleep, clock=clock)
        if arn is not None:
            return arn
        status = _describe(client, stream_arn, name, backoff, sleep).get("ConsumerStatus")


def _describe(client: Any, stream_arn: str, name: str, backoff: dict[str, Backoff],
              sleep: Sleep) -> StreamConsumer:
    """The consumer's description, {} when there is none."""
    try:
        desc: StreamConsumer = call(client.describe_stream_consumer, "DescribeStreamConsumer",
                    backoff["describe_stream_consumer"], sleep=sleep,
                    passthrough=("ResourceNotFoundException",), StreamARN=stream_arn,
                                    ConsumerName=name)["ConsumerDescription"]
        return desc
    except Exception as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        return {}


def wait_for(client: Any, stream_arn: str, name: str, status: str | None, *,
             backoff: dict[str, Backoff], timeout_s: float, sleep: Sleep,
             clock: Clock) -> str | None:
    """DescribeStreamConsumer with backoff until ``status`` (or gone, for status None).
    Waiting for ACTIVE, a consumer that turns DELETING or is gone returns None: the caller
    registers it again."""
    deadline, attempt = clock() + timeout_s, 0
    while True:
        desc = _describe(client, stream_arn, name, backoff, sleep)
        current = desc.get("ConsumerStatus")
        if status is None and current is None:
            return None
        if status is not None and current in (None, "DELETING") and attempt > 0:
            return None
        if status is not None and current == status:
            arn: str = desc["ConsumerARN"]
            return arn
        if clock() > deadline:
            raise SourceError(f"consumer {name!r} on {stream_arn} is {current or 'gone'}, "
                              f"not {status or 'gone'}, after {timeout_s:.0f}s")
        sleep(min(2.0, 0.2 * (1.5 ** attempt)))
        attempt += 1


def deregister(client: Any, stream_arn: str, name: str, *,
               backoff: dict[str, Backoff] | None = None, timeout_s: float = 300,
               sleep: Sleep = time.sleep, clock: Clock = time.monotonic) -> bool:
    """Deregister ``name`` and wait until it is gone, so a quick rerun with the same name
    does not meet a consumer still DELETING. A consumer already gone is fine; one still
    CREATING (Kinesis refuses to deregister it: ResourceInUseException) is waited for."""
    backoff = backoff or DEFAULT_BACKOFF
    deadline = clock() + timeout_s
    while True:
        status = _describe(client, stream_arn, name, backoff, sleep).get("ConsumerStatus")
        if status is None:
            return False
        if status != "DELETING":
            try:
                call(client.deregister_stream_consumer, "DeregisterStreamConsumer",
                     backoff["deregister_stream_consumer"], sleep=sleep,
                     passthrough=("ResourceNotFoundException", "ResourceInUseException"),
                     StreamARN=stream_arn, ConsumerName=name)
            except Exception as exc:
                code = error_code(exc)
                if code == "ResourceInUseException" and clock() < deadline:
                    sleep(backoff["deregister_stream_consumer"].delay_s(0) + 0.2)
                    continue  # still CREATING (or changing): ask again
                if code != "ResourceNotFoundException":
                    raise
        faults.check("efo_deregister")  # deregistering, not yet gone
        wait_for(client, stream_arn, name, None, backoff=backoff,
                 timeout_s=max(1.0, deadline - clock()), sleep=sleep, clock=clock)
        return True


def is_run_consumer(name: str, consumer_name: str) -> bool:
    """Whether ``consumer_name`` is one of ``name``'s per-run consumers (``<name>-<10 hex>``),
    not another pipeline's consumer that merely starts with the same letters."""
    return re.fullmatch(re.escape(name) + r"-[0-9a-f]{10}", consumer_name) is not None


def sweep(client: Any, stream_arn: str, name: str, older_than_s: float, *,
          now: float | None = None, sleep: Sleep = time.sleep) -> list[str]:
    """Deregister ``name``'s per-run consumers created more than ``older_than_s`` ago (left
    over from crashed runs); returns their names."""
    now = now if now is not None else time.time()
    gone: list[str] = []
    for c in list_consumers(client, stream_arn):
        created = c["ConsumerCreationTimestamp"].timestamp()
        if is_run_consumer(name, c["ConsumerName"]) and now - created > older_than_s:
            deregister(client, stream_arn, c["ConsumerName"], sleep=sleep)
            gone.append(c["ConsumerName"])
    return gone
