"""Enhanced Fan-Out consumer registration, as Airflow setup/teardown tasks use it.

Strategies (Flink's ``flink.stream.efo.registration``):
  ``per_run`` (Flink LAZY): register ``<name>-<run hash>`` at the start of a run, deregister at
  its end, so overlapping runs never share (or delete) each other's consumer;
  ``keep`` (Flink EAGER): register ``<name>`` if missing, never deregister;
  ``none`` (Flink NONE): the consumer ARN comes from the config; no calls.
"""
import hashlib
import re
import time

from .. import faults
from ..errors import SourceError
from .client import DEFAULT_BACKOFF, call, error_code

CONSUMER_LIMIT = 20  # consumers per stream


def run_consumer_name(name, run_id):
    return f"{name}-{hashlib.sha1(run_id.encode()).hexdigest()[:10]}"


def list_consumers(client, stream_arn):
    out, token = [], None
    while True:
        args = {"StreamARN": stream_arn, "MaxResults": 100}
        if token:
            args = {"StreamARN": stream_arn, "NextToken": token, "MaxResults": 100}
        resp = call(client.list_stream_consumers, "ListStreamConsumers",
                    DEFAULT_BACKOFF["list_shards"], **args)
        out += resp.get("Consumers", [])
        token = resp.get("NextToken")
        if not token:
            return out


def register(client, stream_arn, name, *, backoff=None, timeout_s=300, sleep=time.sleep,
             clock=time.monotonic):
    """Register ``name`` (or reuse it) and wait until it is ACTIVE; returns the consumer ARN."""
    backoff = backoff or DEFAULT_BACKOFF
    existing = {c["ConsumerName"]: c for c in list_consumers(client, stream_arn)}
    if name not in existing:
        if len(existing) >= CONSUMER_LIMIT:
            raise SourceError(
                f"stream {stream_arn} already has {len(existing)} consumers, the Kinesis limit "
                f"of {CONSUMER_LIMIT}; deregister unused ones (streamslice efo list/sweep) or use "
                "efo.registration: none with an existing consumer")
        try:
            # LimitExceededException here means 5 consumers are CREATING at once: retried.
            call(client.register_stream_consumer, "RegisterStreamConsumer",
                 backoff["register_stream_consumer"], retry_on={"LimitExceededException"},
                 passthrough=("ResourceInUseException",), sleep=sleep,
                 StreamARN=stream_arn, ConsumerName=name)
        except Exception as exc:
            if error_code(exc) != "ResourceInUseException":  # lost a race: it exists now
                raise
    faults.check("efo_register")  # registered, not yet ACTIVE
    return wait_for(client, stream_arn, name, "ACTIVE", backoff=backoff, timeout_s=timeout_s,
                    sleep=sleep, clock=clock)


def wait_for(client, stream_arn, name, status, *, backoff, timeout_s, sleep, clock):
    """DescribeStreamConsumer with backoff until ``status`` (or gone, for status None)."""
    deadline, attempt = clock() + timeout_s, 0
    while True:
        try:
            desc = call(client.describe_stream_consumer, "DescribeStreamConsumer",
                        backoff["describe_stream_consumer"], sleep=sleep,
                        passthrough=("ResourceNotFoundException",),
                        StreamARN=stream_arn, ConsumerName=name)["ConsumerDescription"]
        except Exception as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise
            if status is None:
                return None
            desc = {"ConsumerStatus": "MISSING"}
        if status is not None and desc["ConsumerStatus"] == status:
            return desc["ConsumerARN"]
        if clock() > deadline:
            raise SourceError(f"consumer {name!r} on {stream_arn} is {desc['ConsumerStatus']}, "
                              f"not {status or 'gone'}, after {timeout_s}s")
        sleep(min(2.0, 0.2 * (1.5 ** attempt)))
        attempt += 1


def deregister(client, stream_arn, name, *, backoff=None, timeout_s=300, sleep=time.sleep,
               clock=time.monotonic):
    """Deregister ``name`` by ARN and wait until it is gone, so a quick rerun with the same name
    does not meet a consumer still DELETING. A consumer already gone is fine."""
    backoff = backoff or DEFAULT_BACKOFF
    try:
        arn = call(client.describe_stream_consumer, "DescribeStreamConsumer",
                   backoff["describe_stream_consumer"], sleep=sleep,
                   passthrough=("ResourceNotFoundException",), StreamARN=stream_arn,
                   ConsumerName=name)["ConsumerDescription"]["ConsumerARN"]
    except Exception as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return False
        raise
    try:
        call(client.deregister_stream_consumer, "DeregisterStreamConsumer",
             backoff["deregister_stream_consumer"], sleep=sleep,
             passthrough=("ResourceNotFoundException",), ConsumerARN=arn)
    except Exception as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
    faults.check("efo_deregister")  # deregistering, not yet gone
    wait_for(client, stream_arn, name, None, backoff=backoff, timeout_s=timeout_s, sleep=sleep,
             clock=clock)
    return True


def is_run_consumer(name, consumer_name):
    """Whether ``consumer_name`` is one of ``name``'s per-run consumers (``<name>-<10 hex>``),
    not another pipeline's consumer that merely starts with the same letters."""
    return re.fullmatch(re.escape(name) + r"-[0-9a-f]{10}", consumer_name) is not None


def sweep(client, stream_arn, name, older_than_s, *, now=None, sleep=time.sleep):
    """Deregister ``name``'s per-run consumers created more than ``older_than_s`` ago (left
    over from crashed runs); returns their names."""
    now = now if now is not None else time.time()
    gone = []
    for c in list_consumers(client, stream_arn):
        created = c["ConsumerCreationTimestamp"].timestamp()
        if is_run_consumer(name, c["ConsumerName"]) and now - created > older_than_s:
            deregister(client, stream_arn, c["ConsumerName"], sleep=sleep)
            gone.append(c["ConsumerName"])
    return gone
