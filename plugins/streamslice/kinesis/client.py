"""boto3 Kinesis clients from plain properties, and retries with full-jitter backoff
(Flink's ``*.maxretries`` / ``backoff.base`` / ``backoff.max`` / ``backoff.expconst``)."""
import random
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from ..errors import ConfigError, SourceError


@dataclass(frozen=True)
class Backoff:
    max_retries: int = 3
    base_ms: int = 300
    max_ms: int = 1000
    exponent: float = 1.5

    def delay_s(self, attempt, rng=random):
        """Full jitter: uniform in [0, min(max, base * exponent ** attempt)]."""
        cap = min(self.max_ms, self.base_ms * (self.exponent ** attempt))
        return rng.uniform(0, cap) / 1000


# Flink's defaults (ConsumerConfigConstants).
DEFAULT_BACKOFF = {
    "get_records": Backoff(3, 300, 1000, 1.5),
    "get_shard_iterator": Backoff(3, 300, 1000, 1.5),
    "list_shards": Backoff(10, 1000, 5000, 1.5),
    "subscribe_to_shard": Backoff(10, 1000, 2000, 1.5),
    "register_stream_consumer": Backoff(10, 500, 2000, 1.5),
    "deregister_stream_consumer": Backoff(10, 500, 2000, 1.5),
    "describe_stream_consumer": Backoff(50, 2000, 5000, 1.5),
}

RETRYABLE = {"ProvisionedThroughputExceededException", "LimitExceededException",
             "KMSThrottlingException", "InternalFailure", "ServiceUnavailable",
             "InternalFailureException", "ThrottlingException"}


def make_client(props=None, *, utc_timestamps=False):
    """``props``: region, endpoint_url, access_key_id, secret_access_key, session_token — all
    optional (the default credential chain and region apply). ``utc_timestamps``: the readers'
    client, which parses every record's arrival time (see ``utc_timestamp``); it is made once
    per process and properties (clients are thread-safe; making one costs more CPU than
    reading a small shard)."""
    import boto3
    from botocore.config import Config
    props = props or {}
    kwargs = {"region_name": props.get("region") or None,
              "endpoint_url": props.get("endpoint_url") or None,
              "config": Config(retries={"total_max_attempts": 1}, connect_timeout=10,
                               read_timeout=60, tcp_keepalive=True)}
    if props.get("access_key_id"):
        kwargs.update(aws_access_key_id=props["access_key_id"],
                      aws_secret_access_key=props.get("secret_access_key"),
                      aws_session_token=props.get("session_token") or None)
    from botocore.exceptions import NoRegionError
    try:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if not utc_timestamps:
            return boto3.client("kinesis", **kwargs)
        key = tuple(sorted((k, v) for k, v in kwargs.items() if k != "config"))
        with _LOCK:  # boto3 sessions are not thread-safe
            if key not in _READER_CLIENTS:  # one per process: a Spark worker reads many splits
                _READER_CLIENTS[key] = _utc_session().client("kinesis", **kwargs)
            return _READER_CLIENTS[key]
    except NoRegionError:
        raise ConfigError("no AWS region: set kinesis.region, the AWS connection's "
                          "region_name, or AWS_DEFAULT_REGION") from None
    except ValueError as exc:  # botocore: "Invalid endpoint: …"
        raise ConfigError(f"kinesis.endpoint_url: {exc}") from None


_LOCK = threading.Lock()
_SESSIONS: list = []
_READER_CLIENTS: dict = {}


def _utc_session():
    """One boto3 session per process whose responses parse timestamps with ``utc_timestamp``
    (a session of its own, so other clients keep botocore's default)."""
    if not _SESSIONS:
        import boto3
        import botocore.session
        core = botocore.session.get_session()
        core.get_component("response_parser_factory").set_parser_defaults(
            timestamp_parser=utc_timestamp)
        _SESSIONS.append(boto3.session.Session(botocore_session=core))
    return _SESSIONS[0]


def utc_timestamp(value):
    """A timestamp of a response as an aware UTC datetime. Kinesis sends epoch seconds;
    botocore's default parser makes each a datetime in the local zone through dateutil, about
    40 µs a record, most of a read's CPU. The same instant in UTC costs about 1 µs. Anything but
    a number goes to botocore's parser."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, timezone.utc)
    from botocore.utils import parse_timestamp
    return parse_timestamp(value)


def error_code(exc):
    return getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__


def call(fn, what, backoff, *, retry_on=RETRYABLE, passthrough=(), sleep=time.sleep, **kwargs):
    """Call a Kinesis API with retries on throttling/transient errors. Codes in ``passthrough``
    re-raise the ClientError for the caller to handle; other errors raise SourceError naming
    the call."""
    from botocore.exceptions import BotoCoreError, ClientError
    attempt = 0
    while True:
        try:
            return fn(**kwargs)
        except ClientError as exc:
            code = error_code(exc)
            if code in passthrough:
                raise
            if code in retry_on and attempt < backoff.max_retries:
                sleep(backoff.delay_s(attempt))
                attempt += 1
                continue
            raise SourceError(f"Kinesis {what} failed: {code}: "
                              f"{exc.response.get('Error', {}).get('Message', '')}".rstrip(": ")
                              ) from None
        except BotoCoreError as exc:
            if attempt < backoff.max_retries:
                sleep(backoff.delay_s(attempt))
                attempt += 1
                continue
            raise SourceError(f"Kinesis {what} failed: {exc}") from None
