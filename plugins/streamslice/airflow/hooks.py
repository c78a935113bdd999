"""Connections: Airflow owns credentials; the core receives plain client properties."""
from airflow.sdk import BaseHook


class KafkaConnectionHook(BaseHook):
    """Client properties from an Airflow connection, as the apache-kafka provider keeps them:
    the extra is a JSON map of client properties (``bootstrap.servers``, ``security.protocol``,
    ``sasl.*``, ``ssl.*``…). Host/port and login/password fill in what the extra leaves out."""

    conn_name_attr = "kafka_conn_id"
    default_conn_name = "kafka_default"
    conn_type = "kafka"
    hook_name = "Kafka (streamslice)"

    def __init__(self, kafka_conn_id=default_conn_name):
        super().__init__()
        self.kafka_conn_id = kafka_conn_id

    def client_properties(self):
        conn = self.get_connection(self.kafka_conn_id)
        props = {k: str(v) for k, v in (conn.extra_dejson or {}).items()}
        if "bootstrap.servers" not in props and conn.host:
            hosts = conn.host if ":" in conn.host else f"{conn.host}:{conn.port or 9092}"
            props["bootstrap.servers"] = hosts
        if conn.login and "sasl.username" not in props:
            props["sasl.username"] = conn.login
        if conn.password and "sasl.password" not in props:
            props["sasl.password"] = conn.password
        return props


def source_properties(source):
    """Client properties for a source config: its connection's, overlaid by the YAML's own."""
    if source.kind == "kafka":
        base = KafkaConnectionHook(source.conn_id).client_properties() if source.conn_id else {}
        return source.client_properties(base)
    from .kinesis import kinesis_properties
    return kinesis_properties(source)
