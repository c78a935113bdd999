"""The Confluent Schema Registry through the confluent-kafka client's REST API
(``confluent_kafka.schema_registry.SchemaRegistryClient``): ids, GUIDs, subject versions and
schema references, with its URL, basic auth and TLS settings.

Errors keep their kind: an id the registry never had is ``UnknownSchema`` (that record is a
dead letter); a subject or version that does not exist, or refused credentials, is a
``ConfigError`` naming it; the registry down, slow or failing (5xx, 429, a transport error)
is a ``SourceError`` that Airflow retries."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, SourceError
from .base import Registered, Registry, UnknownSchema, cached_client

if TYPE_CHECKING:
    from ..sources import Properties
    from .base import RegistrySpec

# The client's own names (``url``, ``basic.auth.user.info``, ``ssl.*``…); numbers as numbers.
_NUMBERS = ("timeout", "max.retries", "retries.wait.ms", "retries.max.wait.ms",
            "cache.capacity")
# A registry that does not answer fails the read soon, as a retryable error.
DEFAULTS = {"timeout": 10, "max.retries": 2, "retries.wait.ms": 200,
            "retries.max.wait.ms": 2000}


def confluent_registry(spec: RegistrySpec, properties: Properties) -> Registry:
    conf: dict[str, Any] = dict(DEFAULTS)
    conf.update({k: v for k, v in properties.items() if v not in (None, "")})
    if spec.get("url"):
        conf["url"] = spec["url"]
    for name in _NUMBERS:
        if name in conf:
            try:
                conf[name] = float(conf[name]) if name == "timeout" else int(conf[name])
            except (TypeError, ValueError):
                raise ConfigError(f"schema registry property {name}: {conf[name]!r} is not "
                                  "a number") from None
    if not conf.get("url"):
        raise ConfigError("format.registry: no URL for the Confluent Schema Registry (url, "
                          "or conn_id naming a connection with its host)")
    key = ("confluent", tuple(sorted((k, str(v)) for k, v in conf.items())))
    return cached_client(key, lambda: ConfluentRegistry(conf))


class ConfluentRegistry(Registry):
    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__()
        from confluent_kafka.schema_registry import SchemaRegistryClient
        url = str(conf["url"]).split(",")[0]
        self.where = f"the Confluent Schema Registry at {_public(url)}"
        try:
            self.client = SchemaRegistryClient(conf)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"format.registry: {exc}") from None

    def _fetch(self, kind: str, schema: int | str, fmt: str | None) -> Registered:
        if kind == "confluent":
            name = f"schema id {schema}"
            got = self._call(lambda: self.client.get_schema(int(schema), fmt=fmt), name)
        elif kind == "confluent-guid":
            name = f"schema GUID {schema}"
            got = self._call(lambda: self.client.get_schema_by_guid(str(schema), fmt=fmt),
                             name)
        else:
            raise UnknownSchema(f"an AWS Glue frame (schema version {schema}), but "
                                f"format.registry is {self.where}")
        return self._registered(got, name, schema, None, None, fmt)

    def version(self, subject: str, version: int | None, fmt: str | None = None) -> Registered:
        name = f"subject {subject!r} version {'latest' if version is None else version}"
        got = self._call(lambda: self.client.get_version(
            subject, "latest" if version is None else version, fmt=fmt), name, plan_time=True)
        return self._registered(got.schema, f"subject {subject!r} version {got.version} "
                                f"(schema id {got.schema_id})", got.schema_id, subject,
                                got.version, fmt)

    def _registered(self, schema: Any, name: str, ident: int | str | None,
                    subject: str | None, version: int | None, fmt: str | None) -> Registered:
        refs = tuple((ref.name, self.version(ref.subject, ref.version, fmt))
                     for ref in schema.references or ())
        return Registered(schema.schema_type or "AVRO", schema.schema_str, name, ident,
                          subject, version, refs)

    def _call(self, fn: Any, name: str, plan_time: bool = False) -> Any:
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        try:
            return fn()
        except SchemaRegistryError as exc:
            status, code = exc.http_status_code, exc.error_code
            if status == 404 and not plan_time and code in (40403, -1, 404):
                raise UnknownSchema(f"{name} is not in {self.where}") from None
            if status == 404:
                raise ConfigError(f"format.registry: {name} does not exist in {self.where}: "
                                  f"{exc.error_message}") from None
            if status in (401, 403):
                raise ConfigError(f"format.registry: {self.where} refused the credentials "
                                  f"({status}: {exc.error_message})") from None
            if status == 422 or (400 <= status < 500 and status != 429):
                raise ConfigError(f"format.registry: {self.where} rejected the request for "
                                  f"{name} ({status}: {exc.error_message})") from None
            raise SourceError(f"{self.where} failed for {name} ({status}: "
                              f"{exc.error_message})") from None
        except (OSError, ValueError) as exc:
            raise SourceError(f"{self.where} cannot be reached for {name}: {exc}"
                              ) from None
        except Exception as exc:  # httpx's transport errors (timeouts, refused, TLS)
            if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore",
                                                         "httpcore2", "ssl"):
                raise SourceError(f"{self.where} cannot be reached for {name}: "
                                  f"{type(exc).__name__}: {exc}") from None
            raise


def _public(url: str) -> str:
    """A URL without the user info it may carry."""
    from urllib.parse import urlsplit, urlunsplit
    parts = urlsplit(url.strip())
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
