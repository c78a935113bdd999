"""Connections: Airflow owns credentials; the core receives plain client properties.

A source names its connection type (``Connected.conn_type``) and the function here that reads a
connection of that type (``Connected.connection_hook``, a dotted path: the core never imports
Airflow); ``source_properties`` calls it with the source's ``connection_hints``. One function
per connection type, not per source: a new source reuses one or brings its own.

``pipeline_properties`` is the one resolver of every connection a pipeline names for planning
and reading (its source's and its schema registry's): the plan and read tasks and the
``streamslice`` command all call it, so a pipeline that plans under Airflow plans from the
command line too. A connection that is not defined is a ``ConfigError`` naming the field, the
connection id, the Airflow home looked in and how to define it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from ..registry import load
from ..sources import Connected

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from ..config.pipeline import PipelineConfig
    from ..planning.plan import OutputTarget
    from ..sources import Properties, Source


class KafkaConnectionHook(BaseHook):
    """Client properties from an Airflow connection, as the apache-kafka provider keeps them:
    the extra is a JSON map of client properties (``bootstrap.servers``, ``security.protocol``,
    ``sasl.*``, ``ssl.*``…). Host/port and login/password fill in what the extra leaves out."""

    conn_name_attr = "kafka_conn_id"
    default_conn_name = "kafka_default"
    conn_type = "kafka"
    hook_name = "Kafka (streamslice)"

    def __init__(self, kafka_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id

    def client_properties(self) -> Properties:
        conn = connection(self.kafka_conn_id, "kafka.conn_id")
        props: Properties = {k: str(v) for k, v in (conn.extra_dejson or {}).items()}
        if "bootstrap.servers" not in props and conn.host:
            hosts = conn.host if ":" in conn.host else f"{conn.host}:{conn.port or 9092}"
            props["bootstrap.servers"] = hosts
        if conn.login and "sasl.username" not in props:
            props["sasl.username"] = conn.login
        if conn.password and "sasl.password" not in props:
            props["sasl.password"] = conn.password
        return props


def aws_properties(conn_id: str, region: str | None = None, service: str = "kinesis",
                   field: str = "kinesis.conn_id") -> Properties:
    """Client properties from an Airflow AWS connection, read as the amazon provider reads
    it: ``region_name``, ``endpoint_url`` (or ``service_config.<service>.endpoint_url``),
    ``profile_name``, ``role_arn`` with ``assume_role_kwargs`` (``ExternalId``,
    ``RoleSessionName``, ``DurationSeconds``), ``service_config.sts.endpoint_url``; static
    keys (login/password, or the extra's ``aws_access_key_id``…) as ``access_key_id``… .
    The role is not assumed here: each process that calls AWS assumes it itself, with
    credentials that refresh (``streamslice.aws``); the keys are secrets and never travel
    in a plan."""
    from airflow.providers.amazon.aws.utils.connection_wrapper import AwsConnectionWrapper
    conn = AwsConnectionWrapper(connection(conn_id, field), region_name=region)
    kwargs = conn.assume_role_kwargs or {}
    if conn.role_arn and (conn.assume_role_method or "assume_role") != "assume_role":
        from ..errors import ConfigError
        raise ConfigError(f"AWS connection {conn_id!r}: assume_role_method "
                          f"{conn.assume_role_method!r} is not supported (assume_role is)")
    props = {"region": conn.region_name,
             "endpoint_url": conn.get_service_endpoint_url(service),
             "profile": conn.profile_name, "role_arn": conn.role_arn,
             "external_id": kwargs.get("ExternalId"),
             "session_name": kwargs.get("RoleSessionName"),
             "session_duration": kwargs.get("DurationSeconds"),
             "sts_endpoint_url": conn.get_service_config("sts").get("endpoint_url"),
             "access_key_id": conn.aws_access_key_id,
             "secret_access_key": conn.aws_secret_access_key,
             "session_token": conn.aws_session_token}
    return {k: v for k, v in props.items() if v}


def pipeline_properties(cfg: PipelineConfig) -> Properties:
    """The client properties a run is planned and read with: the source's connection
    (``source_properties``) and the schema registry's (``registry_properties``)."""
    return {**source_properties(cfg.source), **registry_properties(cfg.decode)}


# How to define a connection of each type, for the error that says one is missing.
EXAMPLES = {
    "kafka": "--conn-type kafka --conn-extra '{\"bootstrap.servers\": \"HOST:9092\"}'",
    "aws": "--conn-type aws --conn-extra '{\"region_name\": \"REGION\"}'",
    "http": "--conn-type http --conn-host HOST --conn-port 8081",
    "generic": "--conn-type generic --conn-extra '{\"type\": \"rest\", \"uri\": \"URL\"}'",
}
TYPES = {"kafka.conn_id": "kafka", "kinesis.conn_id": "aws", "format.registry.conn_id": "http",
         "format.registry.aws_conn_id": "aws", "output.conn_id": "generic", "--conn-id": "aws"}


def connection(conn_id: str, field: str) -> Connection:
    """The Airflow connection ``field`` names; one that is not defined is a ``ConfigError``
    that says where it was looked for and how to define it.

    In a task, the task SDK asks the API server. Outside one (the ``streamslice`` command,
    the api-server's page) the SDK looks only in the environment and the secrets backends,
    so Airflow's own lookup is asked next: the same backends and the metadata database, as
    ``airflow connections get`` finds a connection."""
    from airflow.sdk.exceptions import AirflowNotFoundException
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        try:
            from airflow.models.connection import Connection as Stored
            return Stored.get_connection_from_secrets(conn_id)
        except Exception:  # noqa: BLE001 - not there either, or no database to ask in this process
            pass
        from ..errors import ConfigError
        example = EXAMPLES[TYPES.get(field, "generic")]
        raise ConfigError(
            f"{field}: Airflow has no connection {conn_id!r} (AIRFLOW_HOME={airflow_home()}): "
            f"define it with `airflow connections add {conn_id} {example}` or the "
            f"environment variable AIRFLOW_CONN_{conn_id.upper()}") from None


def airflow_home() -> str:
    from airflow.configuration import AIRFLOW_HOME
    return AIRFLOW_HOME


def kafka_properties(conn_id: str) -> Properties:
    """Client properties from an Airflow Kafka connection (``KafkaConnectionHook``)."""
    return KafkaConnectionHook(conn_id).client_properties()


def source_properties(source: Source[Any]) -> Properties:
    """Client properties for a source: its connection's (if it names one), overlaid by the
    YAML's own. Without a connection, the client's defaults apply (boto3's chain for AWS)."""
    if not source.conn_id:
        return source.client_properties()
    if not isinstance(source, Connected):
        from ..errors import ConfigError
        raise ConfigError(f"{source.kind} sources take no conn_id")
    read = load(source.connection_hook)
    return source.client_properties(read(source.conn_id, **source.connection_hints()))


def registry_properties(decode: Any) -> Properties:
    """A schema registry's client properties (``schema.registry.*``) from the Airflow
    connection its ``format.registry`` names: for Confluent (``conn_id``) the connection's
    host (with scheme) and port as ``url``, login/password as basic auth, and its extra's
    client properties (``ssl.ca.location``, ``ssl.certificate.location``…); for Glue
    (``aws_conn_id``) the AWS connection, as the Kinesis source reads it. Resolved in the
    task that plans or reads, never written into the plan."""
    registry = next((spec.options["registry"] for spec in (decode.value, decode.key)
                     if isinstance(spec.options.get("registry"), dict)), None)
    if registry is None:
        return {}
    props: Properties = {}
    if registry.get("kind") == "glue":
        if registry.get("aws_conn_id"):
            props = aws_properties(registry["aws_conn_id"], registry.get("region"), "glue",
                                   "format.registry.aws_conn_id")
    elif registry.get("conn_id"):
        conn = connection(registry["conn_id"], "format.registry.conn_id")
        props = {k: str(v) for k, v in (conn.extra_dejson or {}).items()}
        if conn.host and "url" not in props:
            host = conn.host if "://" in conn.host else \
                f"{conn.schema or 'http'}://{conn.host}"
            props["url"] = f"{host}:{conn.port}" if conn.port else host
        if conn.login and "basic.auth.user.info" not in props:
            props["basic.auth.user.info"] = f"{conn.login}:{conn.password or ''}"
    return {f"schema.registry.{k}": v for k, v in props.items()}


def with_catalog_connection(output: OutputTarget | None) -> OutputTarget | None:
    """An Iceberg output whose catalog properties live in an Airflow connection (its extra,
    e.g. {"type": "rest", "uri": …, "credential": …}): resolved only in the commit task, so
    secrets never enter the plan; the YAML's own properties win."""
    if output is None or not output.conn_id:
        return output
    from dataclasses import replace
    conn = connection(output.conn_id, "output.conn_id")
    props = {k: str(v) for k, v in (conn.extra_dejson or {}).items()}
    return replace(output, catalog={**props, **output.catalog})
