"""boto3 sessions from an ``AwsAuth``: one per process and auth, with credentials that refresh.

Base credentials come from ``secrets`` (static keys handed over privately) or botocore's
default chain (with ``profile``). With ``role_arn`` the session's credentials are botocore's
``DeferredRefreshableCredentials`` over an ``AssumeRoleCredentialFetcher``: every request
signs with credentials that are re-assumed before they expire (botocore refreshes 15 minutes
ahead, and must 10 minutes ahead), so clients may be kept for the whole life of a process.
"""
from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..sources import Properties
    from .auth import AwsAuth

_LOCK = threading.Lock()  # boto3 sessions are not thread-safe; clients are
_SESSIONS: dict[tuple[Any, ...], Any] = {}


class AssumeRoleArgs(TypedDict, total=False):
    """STS AssumeRole's parameters besides the role (botocore's ``extra_args``)."""

    RoleSessionName: str
    DurationSeconds: int
    ExternalId: str
STREAM_ARN = re.compile(r"arn:(aws[a-z-]*):kinesis:([a-z0-9-]+):(\d{12}):stream/([\w.-]+)")


def stream_ref(ref: str) -> tuple[str, str | None]:
    """A stream name or ARN → (name, ARN or None). Calls pass ``StreamARN`` where there is
    one: that is what reaches a stream of another account (through its resource policy)."""
    if not ref.startswith("arn:"):
        return ref, None
    m = STREAM_ARN.fullmatch(ref)
    if not m:
        raise ConfigError(f"{ref!r} is not a Kinesis stream ARN "
                          "(arn:aws:kinesis:<region>:<account>:stream/<name>)")
    return m.group(4), ref


def stream_region(ref: str) -> str | None:
    m = STREAM_ARN.fullmatch(ref)
    return m.group(2) if m else None


def boto3_session(auth: AwsAuth, secrets: Properties | None = None, *,
                  timestamp_parser: Any = None) -> Any:
    """The process's boto3 session for ``auth`` (made once, then shared). ``secrets``:
    ``access_key_id``/``secret_access_key``/``session_token`` as base credentials instead of
    the default chain. ``timestamp_parser``: how responses parse timestamps (the Kinesis
    readers' fast UTC parser), for sessions of their own."""
    secrets = {k: v for k, v in (secrets or {}).items()
               if k in ("access_key_id", "secret_access_key", "session_token") and v}
    key = (auth, tuple(sorted(secrets.items())), timestamp_parser)
    with _LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = _new_session(auth, secrets, timestamp_parser)
        return _SESSIONS[key]


def aws_client(service: str, auth: AwsAuth, secrets: Properties | None = None, *,
               endpoint_url: str | None = None, config: Any = None,
               timestamp_parser: Any = None) -> Any:
    """A boto3 client of ``service`` for ``auth``; ``endpoint_url`` defaults to the auth's."""
    from botocore.exceptions import NoRegionError
    session = boto3_session(auth, secrets, timestamp_parser=timestamp_parser)
    try:
        with _LOCK:  # None (or ""): boto3's own default for each
            return session.client(service, region_name=auth.region or None,
                                  endpoint_url=endpoint_url or auth.endpoint_url or None,
                                  config=config or None)
    except NoRegionError:
        raise ConfigError(f"no AWS region for {service}: set region (in the pipeline or the "
                          "AWS connection's region_name) or AWS_DEFAULT_REGION") from None
    except ValueError as exc:  # botocore: "Invalid endpoint: …"
        raise ConfigError(f"{service} endpoint_url: {exc}") from None


def frozen_credentials(auth: AwsAuth, secrets: Properties | None = None) -> Any:
    """The session's current credentials (access_key, secret_key, token), refreshed first if
    they are near expiry: for clients that take keys, not a session (pyarrow's S3, pyiceberg's
    FileIO). They stay valid at least the 10 minutes botocore keeps in hand; take them again
    for each operation rather than keeping them."""
    creds = boto3_session(auth, secrets).get_credentials()
    if creds is None:
        raise ConfigError(no_credentials_message(auth))
    return creds.get_frozen_credentials()


def no_credentials_message(auth: AwsAuth) -> str:
    where = f"profile {auth.profile!r}" if auth.profile else "the default chain"
    return (f"no AWS credentials found through {where} in this process: give it an identity "
            "(an instance, task or execution role, AWS_* environment variables, a profile) "
            "or an Airflow AWS connection")


def _new_session(auth: AwsAuth, secrets: Properties, timestamp_parser: Any) -> Any:
    import boto3
    base = _core_session(auth, secrets, timestamp_parser)
    if not auth.role_arn:
        return boto3.session.Session(botocore_session=base)
    from botocore.credentials import (
        AssumeRoleCredentialFetcher,
        CredentialProvider,
        DeferredRefreshableCredentials,
    )
    source = base.get_credentials()
    if source is None:
        raise ConfigError(no_credentials_message(auth) + f" to assume {auth.role_arn}")

    def sts_client(service: str, **kwargs: Any) -> Any:
        region = auth.region or base.get_config_variable("region") or "us-east-1"
        return base.create_client(service, region_name=region,
                                  endpoint_url=auth.sts_endpoint_url, **kwargs)

    extra = AssumeRoleArgs(RoleSessionName=auth.session_label,
                           DurationSeconds=auth.session_duration_s)
    if auth.external_id:
        extra["ExternalId"] = auth.external_id
    fetcher = AssumeRoleCredentialFetcher(sts_client, source, auth.role_arn, extra_args=extra)
    assumed = DeferredRefreshableCredentials(fetcher.fetch_credentials, "assume-role")

    class AssumedRole(CredentialProvider):  # type: ignore[misc]  # botocore ships no types
        METHOD = CANONICAL_NAME = "streamslice-assume-role"

        def load(self) -> Any:
            return assumed

    core = _core_session(auth, {}, timestamp_parser)
    core.get_component("credential_provider").insert_before("env", AssumedRole())
    return boto3.session.Session(botocore_session=core)


def _core_session(auth: AwsAuth, secrets: Properties, timestamp_parser: Any) -> Any:
    import botocore.session
    core = botocore.session.Session()
    if auth.profile:
        core.set_config_variable("profile", auth.profile)
    if auth.region:
        core.set_config_variable("region", auth.region)
    if secrets.get("access_key_id"):
        core.set_credentials(secrets["access_key_id"], secrets.get("secret_access_key"),
                             secrets.get("session_token"))
    if timestamp_parser is not None:
        core.get_component("response_parser_factory").set_parser_defaults(
            timestamp_parser=timestamp_parser)
    return core
