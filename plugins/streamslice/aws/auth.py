"""``AwsAuth``: how a process reaches AWS, with no secret in it (it goes into plans and job
arguments). Static keys, where a deployment has them, travel apart (``SECRET_KEYS``)."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..timestamps import parse_duration_ms

# Client-property names that hold secrets: never in a plan, XCom, manifest, log or job
# argument (Spark's spark.redaction.regex, plus the SASL JAAS config and PEM keys).
SECRET_KEYS = re.compile(r"(?i)password|secret|token|jaas|access[._]?key|key\.pem|"
                         r"credential|user[._]?info")  # a registry's basic.auth.user.info
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+")
MIN_SESSION_S, MAX_SESSION_S = 900, 43_200  # what STS AssumeRole accepts
# botocore's own checks (utils.validate_region_name, is_valid_endpoint_url), made at validate
# time so a bad value names the pipeline's key instead of failing the plan inside boto3.
REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?")
EXTERNAL_ID = re.compile(r"[\w+=,.@:/-]{2,1224}")  # what STS AssumeRole accepts


def region_name(value: Any) -> str:
    """An AWS region name, as botocore accepts one (``eu-west-1``)."""
    text = value.strip() if isinstance(value, str) else ""
    if not REGION.fullmatch(text):
        raise ValueError(f"{value!r} is not an AWS region name (e.g. eu-west-1)")
    return text


def endpoint_url(value: Any) -> str:
    """An endpoint URL as botocore accepts one: http(s), a host, an optional port."""
    from urllib.parse import urlsplit
    text = value.strip() if isinstance(value, str) else ""
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or \
            not port_ok:
        raise ValueError(f"{value!r} is not an endpoint URL (http:// or https://, a host and "
                         "an optional port, e.g. https://kinesis.eu-west-1.amazonaws.com)")
    return text


def is_secret(name: str) -> bool:
    return SECRET_KEYS.search(name) is not None


@dataclass(frozen=True)
class AwsAuth:
    region: str | None = None
    endpoint_url: str | None = None  # the service's endpoint (a local server, a VPC endpoint)
    profile: str | None = None  # a profile of the process's shared config/credentials files
    role_arn: str | None = None  # assumed in-process, refreshed before it expires
    external_id: str | None = None  # not a secret (AWS: it names the trust, it proves nothing)
    session_name: str | None = None
    session_duration_s: int = 3600
    sts_endpoint_url: str | None = None  # a regional or VPC STS endpoint

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()
                if v is not None and not (k == "session_duration_s" and v == 3600)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> AwsAuth:
        """From a plan's or a property map's keys; unknown keys (and secrets) are ignored."""
        names = {f.name for f in fields(cls)}
        data = dict(data or {})
        if "session_duration" in data and "session_duration_s" not in data:
            data["session_duration_s"] = data.pop("session_duration")
        out = {k: v for k, v in data.items() if k in names and v not in (None, "")}
        if "session_duration_s" in out:
            out["session_duration_s"] = int(out["session_duration_s"])
        return cls(**out)

    def with_defaults(self, other: AwsAuth) -> AwsAuth:
        """``self`` where set, else ``other`` (the YAML over a connection)."""
        mine = self.to_dict()
        return AwsAuth.from_dict({**other.to_dict(), **mine})

    @property
    def session_label(self) -> str:
        return self.session_name or "streamslice"


def parse_auth(f: Any, *, keys: tuple[str, ...] = ()) -> AwsAuth:
    """The AWS keys of a YAML block (``f`` is a config ``Fields``): ``region``,
    ``endpoint_url``, ``profile``, ``role_arn``, ``external_id``, ``session_name``,
    ``session_duration``, ``sts_endpoint_url``; ``keys`` limits them (a block with its own
    meaning for some)."""
    wanted = keys or ("region", "endpoint_url", "profile", "role_arn", "external_id",
                      "session_name", "session_duration", "sts_endpoint_url")
    f.seen.update(wanted)  # what the block's ``done()`` names as allowed
    got: dict[str, Any] = {}
    for key in wanted:
        if key == "session_duration":
            if f.has(key):
                ms = f.parse(key, parse_duration_ms)
                if not MIN_SESSION_S * 1000 <= ms <= MAX_SESSION_S * 1000:
                    raise f.error("must be between 15m and 12h (what STS allows)", key)
                got["session_duration_s"] = ms // 1000
        elif key == "region" and f.has(key):
            got[key] = f.parse(key, region_name)
        elif key in ("endpoint_url", "sts_endpoint_url") and f.has(key):
            got[key] = f.parse(key, endpoint_url)
        elif f.has(key):
            got[key] = f.str(key)
    role = got.get("role_arn")
    if role and not ROLE_ARN.fullmatch(role):
        raise f.error(f"{role!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/name)",
                      "role_arn")
    if ("external_id" in got or "session_name" in got) and not role:
        raise f.error("needs role_arn (it qualifies the role to assume)",
                      "external_id" if "external_id" in got else "session_name")
    external = got.get("external_id")
    if external and not EXTERNAL_ID.fullmatch(external):
        raise f.error(f"{external!r} is not an external id (2-1224 of letters, digits and "
                      "+=,.@:/-_)", "external_id")
    name = got.get("session_name")
    if name and not re.fullmatch(r"[\w+=,.@-]{2,64}", name):
        raise f.error(f"{name!r} is not a role session name (2-64 of letters, digits and "
                      "+=,.@-_)", "session_name")
    return AwsAuth(**got)
