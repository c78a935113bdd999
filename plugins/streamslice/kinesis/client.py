"""boto3 Kinesis clients from plain properties, and retries with full-jitter backoff
(Flink's ``*.maxretries`` / ``backoff.base`` / ``backoff.max`` / ``backoff.expconst``)."""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import SourceError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from ..sources import Properties

# Botocore's shapes, kept as boto3 gives and takes them: a Kinesis API call's keyword
# arguments, and one record (Data, SequenceNumber, ApproximateArrivalTimestamp, …).
ApiArgs = dict[str, Any]
Record = dict[str, Any]


class ShardFilter(TypedDict):
    """ListShards' ShardFilter: the shards open at or after a time (epoch seconds)."""

    Type: str
    Timestamp: float


class ResponseMetadata(TypedDict, total=False):
    HTTPHeaders: dict[str, str]  # lower-case names: "date", …


class Answer(TypedDict, total=False):
    """Any call's answer, as far as its metadata (the server's clock) is read."""

    ResponseMetadata: ResponseMetadata


class StreamConsumer(TypedDict, total=False):
    """An Enhanced Fan-Out consumer as ListStreamConsumers and DescribeStreamConsumer give
    it."""

    ConsumerName: str
    ConsumerARN: str
    ConsumerStatus: str  # CREATING | ACTIVE | DELETING
    ConsumerCreationTimestamp: datetime
    StreamARN: str


@dataclass(frozen=True)
class Backoff:
    max_retries: int = 3
    base_ms: int = 300
    max_ms: int = 1000
    exponent: float = 1.5

    def delay_s(self, attempt: int, rng: Any = random) -> float:
        """Full jitter: uniform in [0, min(max, base * exponent ** attempt)]."""
        cap = min(self.max_ms, self.base_ms * (self.exponent ** attempt))
        return float(rng.uniform(0, cap)) / 1000


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


def make_client(props: Properties | None = None, *, utc_timestamps: bool = False) -> Any:
    """A Kinesis client for client properties: the ``AwsAuth`` keys (region, endpoint_url,
    profile, role_arn, external_id, session_name, session_duration, sts_endpoint_url) and,
    where static keys were handed over privately, access_key_id / secret_access_key /
    session_token; without them the default credential chain and region apply.
    ``utc_timestamps``: the readers' client, which parses every record's arrival time (see
    ``utc_timestamp``); it is made once per process and properties (clients are thread-safe;
    making one costs more CPU than reading a small shard)."""
    from botocore.config import Config

    from ..aws import AwsAuth, aws_client
    props = props or {}
    auth = AwsAuth.from_dict(props)
    secrets = {k: props[k] for k in SECRET_PROPERTIES if props.get(k)}
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60,
                    tcp_keepalive=True)
    if not utc_timestamps:
        return aws_client("kinesis", auth, secrets, config=config)
    key = (auth, tuple(sorted(secrets.items())))
    with _LOCK:
        found = _READER_CLIENTS.get(key)
    if found is None:  # one per process: a Spark worker reads many splits
        found = aws_client("kinesis", auth, secrets, config=config,
                           timestamp_parser=utc_timestamp)
        with _LOCK:
            found = _READER_CLIENTS.setdefault(key, found)
    return found


SECRET_PROPERTIES = ("access_key_id", "secret_access_key", "session_token")
_LOCK = threading.Lock()
_READER_CLIENTS: dict[Any, Any] = {}


def utc_timestamp(value: Any) -> datetime:
    """A timestamp of a response as an aware UTC datetime. Kinesis sends epoch seconds;
    botocore's default parser makes each a datetime in the local zone through dateutil, about
    40 µs a record, most of a read's CPU. The same instant in UTC costs about 1 µs. Anything but
    a number goes to botocore's parser."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, timezone.utc)
    from botocore.utils import parse_timestamp
    parsed: datetime = parse_timestamp(value)
    return parsed


def error_code(exc: BaseException) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__


def call(fn: Callable[..., Any], what: str, backoff: Backoff, *,
         retry_on: Collection[str] = RETRYABLE, passthrough: Collection[str] = (),
         sleep: Callable[[float], None] = time.sleep, **kwargs: Any) -> Any:
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
