"""Schema registries as real parts: the Confluent Schema Registry (REST, through the
confluent-kafka client) and the AWS Glue Schema Registry (boto3), the wire formats their
serializers write (``wire``), and per-process caches of the writer schemas they serve.

A registry is named in the pipeline's ``format.registry`` block (no secrets); its credentials
come from an Airflow connection, resolved where the read runs, as client properties under
``schema.registry.`` (``properties``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import KINDS, Registry, RegistrySpec
from .confluent import confluent_registry
from .glue import glue_registry

if TYPE_CHECKING:
    from ..sources import Properties


def open_registry(spec: RegistrySpec, properties: Properties) -> Registry:
    """``spec``: the plan's ``format.registry`` (kind, url / registry_name, region…);
    ``properties``: what the connection resolved (``schema.registry.`` stripped)."""
    kind = spec.get("kind")
    if kind == "confluent":
        return confluent_registry(spec, properties)
    if kind == "glue":
        return glue_registry(spec, properties)
    raise ConfigError(f"format.registry: kind {kind!r} is not one of {', '.join(KINDS)}")
