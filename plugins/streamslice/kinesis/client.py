"""boto3 Kinesis clients from plain properties, and retries with full-jitter backoff
(Flink's ``*.maxretries`` / ``backoff.base`` / ``backoff.max`` / ``backoff.expconst``)."""
import random
import time
from dataclasses import dataclass

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


def make_client(props=None):
    """``props``: region, endpoint_url, access_key_id, secret_access_key, session_token — all
    optional (the default credential chain and region apply)."""
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
        return boto3.client("kinesis", **{k: v for k, v in kwargs.items() if v is not None})
    except NoRegionError:
        raise ConfigError("no AWS region: set kinesis.region, the AWS connection's "
                          "region_name, or AWS_DEFAULT_REGION") from None
    except ValueError as exc:  # botocore: "Invalid endpoint: …"
        raise ConfigError(f"kinesis.endpoint_url: {exc}") from None


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
