"""The AWS Glue Schema Registry through boto3: a record's writer schema by its schema version
UUID (``GetSchemaVersion``), and a schema's pinned or latest version by registry and schema
name, with the pipeline's AWS connection (region, endpoint, role, credentials).

A version id Glue does not have is ``UnknownSchema`` (that record is a dead letter); a
registry or schema that does not exist, or access denied, is a ``ConfigError`` naming it;
throttling, 5xx and connection errors are a retryable ``SourceError``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, SourceError
from .base import Registered, Registry, UnknownSchema, cached_client

if TYPE_CHECKING:
    from ..sources import Properties
    from .base import RegistrySpec

_RETRYABLE = {"ThrottlingException", "InternalServiceException", "ServiceUnavailable",
              "InternalFailure", "RequestTimeout", "RequestTimeoutException"}
_CONFIG = {"AccessDeniedException", "UnrecognizedClientException", "InvalidInputException",
           "InvalidSignatureException", "ExpiredTokenException", "ValidationException"}


def glue_registry(spec: RegistrySpec, properties: Properties) -> Registry:
    props: Properties = {k: v for k, v in properties.items() if v not in (None, "")}
    for name in ("region", "endpoint_url"):
        if spec.get(name):
            props[name] = spec[name]
    registry = spec.get("registry_name") or "default-registry"
    key = ("glue", registry, tuple(sorted((k, str(v)) for k, v in props.items())))
    return cached_client(key, lambda: GlueRegistry(registry, props))


class GlueRegistry(Registry):
    def __init__(self, registry_name: str, props: Properties) -> None:
        super().__init__()
        self.registry_name = registry_name
        self.where = f"the AWS Glue Schema Registry {registry_name!r}"
        self.client = _client(props)

    def _fetch(self, kind: str, schema: int | str, fmt: str | None) -> Registered:
        if kind != "glue":
            raise UnknownSchema(f"a Confluent frame ({kind} {schema}), but format.registry "
                                f"is {self.where}")
        name = f"schema version {schema}"
        got = self._call(lambda: self.client.get_schema_version(SchemaVersionId=str(schema)),
                         name)
        return self._registered(got, name)

    def version(self, subject: str, version: int | None, fmt: str | None = None) -> Registered:
        number = {"LatestVersion": True} if version is None else {"VersionNumber": version}
        which = "latest" if version is None else version
        name = f"schema {subject!r} version {which}"
        got = self._call(lambda: self.client.get_schema_version(
            SchemaId={"RegistryName": self.registry_name, "SchemaName": subject},
            SchemaVersionNumber=number), name, plan_time=True)
        out = self._registered(got, f"schema {subject!r} version {got.get('VersionNumber')} "
                               f"({got['SchemaVersionId']})")
        return Registered(out.schema_type, out.text, out.name, out.id, subject,
                          got.get("VersionNumber"))

    @staticmethod
    def _registered(got: dict[str, Any], name: str) -> Registered:
        status = got.get("Status", "AVAILABLE")
        if status not in ("AVAILABLE", "DELETING"):
            raise UnknownSchema(f"{name} is {status} in the AWS Glue Schema Registry")
        return Registered(got.get("DataFormat") or "AVRO", got["SchemaDefinition"], name,
                          got.get("SchemaVersionId"), None, got.get("VersionNumber"))

    def _call(self, fn: Any, name: str, plan_time: bool = False) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
        try:
            return fn()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            message = exc.response.get("Error", {}).get("Message", "")
            if code == "EntityNotFoundException":
                if not plan_time:
                    raise UnknownSchema(f"{name} is not in {self.where}") from None
                raise ConfigError(f"format.registry: {name} does not exist in {self.where}: "
                                  f"{message}") from None
            if code in _CONFIG:
                raise ConfigError(f"format.registry: {self.where} refused {name}: {code}: "
                                  f"{message}") from None
            if code in _RETRYABLE or exc.response.get("ResponseMetadata", {}).get(
                    "HTTPStatusCode", 500) >= 500:
                raise SourceError(f"{self.where} failed for {name}: {code}: {message}"
                                  ) from None
            raise ConfigError(f"format.registry: {self.where} refused {name}: {code}: "
                              f"{message}") from None
        except NoCredentialsError:
            raise ConfigError(f"format.registry: no AWS credentials for {self.where} (set the "
                              "registry's aws_conn_id)") from None
        except BotoCoreError as exc:
            raise SourceError(f"{self.where} cannot be reached for {name}: {exc}"
                              ) from None


def _client(props: Properties) -> Any:
    """A Glue client through the process's AWS session factory (``streamslice.aws``): the
    connection's region, endpoint, profile and role (assumed here, refreshed), keys apart."""
    from botocore.config import Config

    from ..aws import AwsAuth, aws_client
    return aws_client("glue", AwsAuth.from_dict(props), props, config=Config(
        retries={"total_max_attempts": 3, "mode": "standard"}, connect_timeout=5,
        read_timeout=10))
