"""Kafka client properties: users write librdkafka/Java names; kafka-python wants kwargs."""

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
}

# Properties only the read path cares about; planning ignores them quietly.
_READ_ONLY = {"fetch.min.bytes", "fetch.wait.max.ms", "queued.max.messages.kbytes",
              "queued.min.messages", "receive.message.max.bytes", "check.crcs"}


def kafka_python_kwargs(properties):
    """Translate client properties to kafka-python kwargs; unknown ones raise ValueError."""
    out = {}
    for name, value in properties.items():
        if name in _READ_ONLY:
            continue
        if name == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = str(value).lower() == "https"
            continue
        if name not in _TO_KAFKA_PYTHON:
            raise ValueError(f"client property {name!r} is not supported with client kafka-python")
        target = _TO_KAFKA_PYTHON[name]
        assert target is not None
        if target == "bootstrap_servers":
            value = [s.strip() for s in str(value).split(",") if s.strip()]
        elif target == "security_protocol":
            value = str(value).upper()
        elif target.endswith("_ms") or target.endswith("_bytes"):
            value = int(value)
        out[target] = value
    return out


def check_bootstrap_servers(text):
    """``host:port[,host:port…]`` → normalised string, or ValueError naming the bad entry."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("must be host:port[,host:port...]")
    servers = [s.strip() for s in text.split(",")]
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{server!r} is not host:port (e.g. 127.0.0.1:9092)")
    return ",".join(servers)
