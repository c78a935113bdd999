"""Amazon MSK IAM access control: SASL/OAUTHBEARER with tokens signed by AWS credentials
(aws-msk-iam-sasl-signer-python), built where each Kafka client is built.

The client properties carry only ``streamslice.msk_iam``, the ``AwsAuth`` of the identity
(region, profile, role to assume: no secret); every process that makes a client (the plan
task's kafka-python admin, the readers on Spark executors or a Spark Connect server, the
consumer-group mirror) turns it into a token callback over its own credentials
(``streamslice.aws``: the default chain, then the role, refreshed before it expires). Tokens
live 15 minutes, or less when the credentials end sooner; librdkafka asks for a new one at
80% of that, kafka-python at each (re)connection, and each token is signed afresh.
"""
from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from ..aws import AwsAuth, boto3_session
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..sources import Properties
    from .properties import ClientKwargs

AUTH_KEY = "streamslice.msk_iam"  # client property: the AwsAuth as JSON
# b-1.cluster.abc123.c2.kafka.us-east-1.amazonaws.com, boot-x.c1.kafka-serverless.….com
MSK_HOST = re.compile(r"(?:^|\.)kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d+)"
                      r"\.amazonaws\.com(?:\.cn)?$")


def msk_region(servers: str | None) -> str | None:
    """The region of MSK brokers (all of them), else None."""
    hosts = [s.strip().rpartition(":")[0] or s.strip() for s in (servers or "").split(",")
             if s.strip()]
    regions = {m.group(1) for m in (MSK_HOST.search(h) for h in hosts) if m}
    if len(regions) == 1 and all(MSK_HOST.search(h) for h in hosts):
        return regions.pop()
    return None


def detected(properties: Properties) -> bool:
    """A connection that says MSK IAM as the apache-kafka provider detects it: OAUTHBEARER
    to MSK brokers, with no OIDC token endpoint of its own."""
    mech = str(properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or "")
    return (mech.upper() == "OAUTHBEARER" and msk_region(_servers(properties))
            is not None and "sasl.oauthbearer.token.endpoint.url" not in properties)


def with_msk_iam(properties: Properties, auth: AwsAuth | None = None) -> Properties:
    """Client properties for MSK IAM: SASL_SSL, OAUTHBEARER and the identity to sign with
    (its region from the brokers' host names unless given)."""
    auth = auth or AwsAuth()
    region = auth.region or msk_region(_servers(properties))
    if not region:
        raise ConfigError("auth msk_iam needs a region: the brokers are not "
                          "*.kafka.<region>.amazonaws.com names, so set kafka.aws.region")
    out = {k: v for k, v in properties.items() if k != "sasl.mechanisms"}
    out.setdefault("security.protocol", "SASL_SSL")
    out["sasl.mechanism"] = "OAUTHBEARER"
    out[AUTH_KEY] = json.dumps(AwsAuth.from_dict({**auth.to_dict(), "region": region})
                               .to_dict(), sort_keys=True)
    return out


class MskIamTokens:
    """Token callback for one identity: ``oauth_cb`` for confluent-kafka (``__call__``),
    ``token()`` for kafka-python's token provider."""

    def __init__(self, auth: AwsAuth, clock: Any = time.time) -> None:
        self.auth, self.clock = auth, clock

    def __call__(self, _oauthbearer_config: Any = None) -> tuple[str, float]:
        """(token, expiry in epoch seconds), as librdkafka's oauth_cb returns it."""
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
        from botocore.credentials import CredentialProvider
        creds = boto3_session(self.auth).get_credentials()
        if creds is None:
            from ..aws.session import no_credentials_message
            raise ConfigError(no_credentials_message(self.auth) + " for Amazon MSK IAM")
        frozen = creds.get_frozen_credentials()

        class Fixed(CredentialProvider):  # type: ignore[misc]  # botocore ships no types
            METHOD = "streamslice"

            def load(self) -> Any:
                from botocore.credentials import Credentials
                return Credentials(frozen.access_key, frozen.secret_key, frozen.token)

        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_credentials_provider(
            self.auth.region, Fixed())
        ends = getattr(creds, "_expiry_time", None)  # refreshable credentials end sooner?
        expiry = expiry_ms / 1000
        if ends is not None:
            expiry = min(expiry, ends.timestamp())
        return token, expiry

    def token(self) -> str:
        return self()[0]


def _servers(properties: Properties) -> str | None:
    servers = properties.get("bootstrap.servers")
    return str(servers) if servers is not None else None


def tokens_for(properties: Properties) -> MskIamTokens | None:
    raw = properties.get(AUTH_KEY)
    return MskIamTokens(AwsAuth.from_dict(json.loads(str(raw)))) if raw else None


def confluent_conf(properties: Properties) -> ClientKwargs:
    """librdkafka configuration: our own keys out, ``oauth_cb`` in for MSK IAM."""
    conf: ClientKwargs = {k: v for k, v in properties.items() if k != AUTH_KEY}
    tokens = tokens_for(properties)
    if tokens is not None:
        conf["oauth_cb"] = tokens
    return conf


def kafka_python_provider(properties: Properties) -> Any:
    """kafka-python's ``sasl_oauth_token_provider`` for MSK IAM, or None."""
    found = tokens_for(properties)
    if found is None:
        return None
    tokens: MskIamTokens = found
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):  # type: ignore[misc]  # kafka-python ships no types
        def token(self) -> str:
            return tokens.token()

    return Provider()
