"""The output's storage with the output's AWS identity (``output.aws``): pyarrow's S3 file
system, delta-rs's storage options and pyiceberg's catalog properties, all from the same
refreshing credentials (``session``), in every process that touches the output (readers
staging their files, the commit publishing them).

pyarrow, delta-rs and pyiceberg's FileIO take keys, not a credential provider, so each gets
the credentials of the moment (botocore has renewed them if they were within 15 minutes of
expiring) and is made again when they change: hold a file system for one operation, not for
a run. Without ``output.aws`` nothing changes: each library finds credentials as it always
did (the default chain, ``AWS_*`` variables)."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .session import boto3_session, frozen_credentials

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from .auth import AwsAuth

S3_SCHEMES = ("s3://", "s3a://", "s3n://")
_LOCK = threading.Lock()
_FILESYSTEMS: dict[tuple[Any, ...], pafs.FileSystem] = {}


def governs(uri: str, auth: AwsAuth | None) -> bool:
    """True when ``auth`` decides how ``uri`` is reached (an S3 URI, and an identity that
    says more than the default chain)."""
    return bool(auth and auth.to_dict()) and uri.startswith(S3_SCHEMES)


def filesystem(uri: str, auth: AwsAuth | None = None) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system for ``uri`` and the path in it."""
    import pyarrow.fs as pafs
    if auth is None or not governs(uri, auth):
        found: tuple[pafs.FileSystem, str] = pafs.FileSystem.from_uri(uri)
        return found
    path = uri.split("://", 1)[1]
    creds = frozen_credentials(auth)
    key = (auth, creds.access_key, creds.secret_key, creds.token)
    with _LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            for old in [k for k in _FILESYSTEMS if k[0] == auth]:
                del _FILESYSTEMS[old]  # the credentials they hold were renewed
            fs = _FILESYSTEMS[key] = pafs.S3FileSystem(
                access_key=creds.access_key, secret_key=creds.secret_key,
                session_token=creds.token, region=auth.region,
                endpoint_override=auth.endpoint_url)
    return fs, path


def delta_storage_options(uri: str, auth: AwsAuth | None) -> dict[str, str] | None:
    """delta-rs (object_store) storage options for ``uri``, or None to let it find its own."""
    if auth is None or not governs(uri, auth):
        return None
    out = _keys(auth, ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                       "AWS_REGION", "AWS_ENDPOINT_URL"))
    if (auth.endpoint_url or "").startswith("http://"):
        out["AWS_ALLOW_HTTP"] = "true"
    return out


def iceberg_properties(properties: dict[str, str], auth: AwsAuth | None) -> dict[str, Any]:
    """pyiceberg catalog properties with ``auth``'s identity: the credentials of the moment
    for its S3 FileIO (``s3.*``), and for a Glue catalog its botocore session itself
    (``botocore_session``), which keeps renewing them. The catalog's own properties win."""
    if not auth or not auth.to_dict():
        return properties
    extra: dict[str, object] = dict(_keys(auth, ("s3.access-key-id", "s3.secret-access-key",
                                                 "s3.session-token", "s3.region", "s3.endpoint")))
    if properties.get("type") == "glue":
        extra["botocore_session"] = boto3_session(auth)._session
        if auth.region:
            extra["glue.region"] = auth.region
    return {**extra, **properties}


def _keys(auth: AwsAuth, names: tuple[str, str, str, str, str]) -> dict[str, str]:
    """The credentials of the moment, region and endpoint under a library's own names
    (access key, secret key, session token, region, endpoint), leaving out what is unset."""
    creds = frozen_credentials(auth)
    values = (creds.access_key, creds.secret_key, creds.token, auth.region, auth.endpoint_url)
    return {name: value for name, value in zip(names, values) if value}
