"""Kafka client properties: users write librdkafka/Java names; kafka-python wants kwargs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sources import Properties

# A Kafka client library's own settings (kafka-python's keyword arguments, librdkafka's
# configuration): Python values, a token callback among them.
ClientKwargs = dict[str, object]

# librdkafka / Java client property → kafka-python keyword argument.
_TO_KAFKA_PYTHON = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": None,  # handled below
    "request.timeout.ms": "request_timeout_ms",
    "socket.connection.setup.timeout.ms": "socket_connection_timeout_ms",
    "isolation.level": "isolation_level",
    "fetch.max.bytes": "fetch_max_bytes",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "socket.receive.buffer.bytes": "receive_buffer_bytes",
    "socket.send.buffer.bytes": "send_buffer_bytes",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "api.version.request.timeout.ms": None,
    "socket.timeout.ms": None,
}

# Properties only the read path (or group membership) cares about; planning ignores them.
_READ_ONLY = {"fetch.min.bytes", "fetch.wait.max.ms", "queued.max.messages.kbytes",
              "queued.min.messages", "receive.message.max.bytes", "check.crcs", "group.id",
              "session.timeout.ms", "heartbeat.interval.ms", "fetch.error.backoff.ms",
              "socket.keepalive.enable", "client.rack", "enable.partition.eof",
              "partition.assignment.strategy", "group.instance.id",
              "topic.metadata.refresh.interval.ms", "statistics.interval.ms"}


def kafka_python_kwargs(properties: Properties) -> ClientKwargs:
    """Translate client properties to kafka-python kwargs; unknown ones raise ValueError."""
    from .msk_iam import AUTH_KEY, kafka_python_provider
    out: ClientKwargs = {}
    for name, value in properties.items():
        if name in _READ_ONLY:
            continue
        if name == AUTH_KEY:  # Amazon MSK IAM: a token provider over this process's identity
            out["sasl_oauth_token_provider"] = kafka_python_provider(properties)
            continue
        if name == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = str(value).lower() == "https"
            continue
        if name not in _TO_KAFKA_PYTHON:
            raise ValueError(f"client property {name!r} is not supported by the planning "
                             "client (kafka-python), which reads metadata and offsets")
        target = _TO_KAFKA_PYTHON[name]
        if target is None:
            continue
        if target == "bootstrap_servers":
            out[target] = [s.strip() for s in str(value).split(",") if s.strip()]
        elif target == "security_protocol":
            out[target] = str(value).upper()
        elif target.endswith("_ms") or target.endswith("_bytes"):
            out[target] = int(str(value))
        else:
            out[target] = value
    return out


def check_bootstrap_servers(text: Any) -> str:
    """``host:port[,host:port…]`` → normalised string, or ValueError naming the bad entry."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("must be host:port[,host:port...]")
    servers = [s.strip() for s in text.split(",")]
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{server!r} is not host:port (e.g. 127.0.0.1:9092)")
    return ",".join(servers)
