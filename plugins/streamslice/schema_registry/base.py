"""What a registry serves, one shape for every registry, and the per-process caches.

A writer schema is fetched once per id and process (a Spark worker reads many splits, each
record names its schema); an id the registry does not have is remembered too, so a topic full
of records with a foreign id asks the registry once, not once per record."""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Required, TypedDict

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..records import JsonObject
    from ..sources import Properties

KINDS = ("confluent", "glue")


class RegistrySpec(TypedDict, total=False):
    """A format's ``registry:`` block as the plan keeps it (``format.registry``): no secret;
    credentials come from the connection, as client properties."""

    kind: Required[str]  # one of KINDS
    url: str  # confluent: the registry's URL, or
    conn_id: str  # an Airflow connection holding it
    registry_name: str  # glue (default: default-registry)
    region: str
    endpoint_url: str
    aws_conn_id: str
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


@dataclass(frozen=True)
class Registered:
    """One schema as the registry holds it."""

    schema_type: str  # AVRO | PROTOBUF | JSON
    text: str  # the definition: Avro JSON, .proto text or base64 descriptor, JSON Schema
    name: str  # how messages name it: "schema id 42", "schema version <uuid>"
    id: int | str | None = None  # Confluent id / GUID, Glue version UUID
    subject: str | None = None  # Confluent subject / Glue schema name, when looked up by it
    version: int | None = None
    references: tuple[tuple[str, Registered], ...] = ()  # (import name, schema)

    def to_dict(self) -> JsonObject:
        """As the plan records a pinned reader schema (so a retry reads the same)."""
        return {"schema_type": self.schema_type, "text": self.text, "name": self.name,
                "id": self.id, "subject": self.subject, "version": self.version,
                "references": [[n, r.to_dict()] for n, r in self.references]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Registered:
        refs = tuple((n, cls.from_dict(r)) for n, r in d.get("references") or ())
        return cls(d["schema_type"], d["text"], d["name"], d.get("id"), d.get("subject"),
                   d.get("version"), refs)


class UnknownSchema(LookupError):
    """A record names a schema the registry does not have (the record is a dead letter)."""


class Registry(ABC):
    """A registry client. ``by_frame`` serves the writer schema a record names; ``version``
    the reader schema a pipeline pins (a missing subject or version is a ConfigError)."""

    where: str  # "the Confluent Schema Registry at https://…" for messages

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writers: dict[tuple[str, int | str, str | None], Registered | str] = {}

    def by_frame(self, kind: str, schema: int | str, fmt: str | None = None) -> Registered:
        """The writer schema a record's frame names; cached, misses included."""
        key = (kind, schema, fmt)
        with self._lock:
            got = self._writers.get(key)
        if got is None:
            try:
                got = self._fetch(kind, schema, fmt)
            except UnknownSchema as exc:
                got = str(exc)
            with self._lock:
                self._writers[key] = got
        if isinstance(got, str):
            raise UnknownSchema(got)
        return got

    @abstractmethod
    def _fetch(self, kind: str, schema: int | str, fmt: str | None) -> Registered:
        """Ask the registry (UnknownSchema, SourceError or ConfigError)."""

    @abstractmethod
    def version(self, subject: str, version: int | None, fmt: str | None = None) -> Registered:
        """A subject's version (None: the latest now)."""


_CLIENTS: dict[tuple[Any, ...], Registry] = {}
_CLIENTS_LOCK = threading.Lock()


def cached_client(key: tuple[Any, ...], make: Callable[[], Registry]) -> Registry:
    """One client per registry, settings and process: its caches serve every split."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = make()
        return client


PREFIX = "schema.registry."


def split_properties(props: Properties) -> tuple[Properties, Properties]:
    """Client properties → (the source client's, the registry's with the prefix stripped)."""
    client = {k: v for k, v in props.items() if not k.startswith(PREFIX)}
    registry = {k[len(PREFIX):]: v for k, v in props.items() if k.startswith(PREFIX)}
    return client, registry
