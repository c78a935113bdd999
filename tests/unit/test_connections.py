"""Connections and client properties: an Airflow Kafka connection's SASL/SSL settings reach
both clients; EFO registration retries the 5-consumers-CREATING limit (fake client)."""

import pytest
from botocore.exceptions import ClientError

from streamslice.kafka.properties import kafka_python_kwargs
from tests.support.connections import connection


def test_kafka_connection_passes_sasl_and_ssl_through(monkeypatch):
    from streamslice.airflow.hooks import KafkaConnectionHook, source_properties
    from streamslice.config import parse_pipeline
    connection(monkeypatch, "secure_kafka", "kafka", login="svc-user", password="s3cret",
               extra={"bootstrap.servers": "k1:9093,k2:9093", "security.protocol": "SASL_SSL",
                      "sasl.mechanism": "SCRAM-SHA-512", "ssl.ca.location": "/etc/ca.pem"})
    props = KafkaConnectionHook("secure_kafka").client_properties()
    assert props == {"bootstrap.servers": "k1:9093,k2:9093", "security.protocol": "SASL_SSL",
                     "sasl.mechanism": "SCRAM-SHA-512", "ssl.ca.location": "/etc/ca.pem",
                     "sasl.username": "svc-user", "sasl.password": "s3cret"}
    cfg = parse_pipeline("""
mode: incremental
kafka:
  conn_id: secure_kafka
  topics: [t]
  properties: {client.id: etl, ssl.endpoint.identification.algorithm: https}
output: {path: /x}
""")
    merged = source_properties(cfg.source)
    assert merged["client.id"] == "etl" and merged["sasl.password"] == "s3cret"
    kp = kafka_python_kwargs(merged)
    assert kp["bootstrap_servers"] == ["k1:9093", "k2:9093"]
    assert kp["security_protocol"] == "SASL_SSL" and kp["sasl_mechanism"] == "SCRAM-SHA-512"
    assert kp["sasl_plain_username"] == "svc-user" and kp["ssl_cafile"] == "/etc/ca.pem"
    assert kp["ssl_check_hostname"] is True
    with pytest.raises(ValueError, match="'sasl.oauthbearer.config' is not supported by the "
                                         "planning client"):
        kafka_python_kwargs({"sasl.oauthbearer.config": "x"})


class FakeKinesis:
    def __init__(self):
        self.calls, self.status = [], "CREATING"

    def list_stream_consumers(self, **kw):
        return {"Consumers": []}

    def register_stream_consumer(self, **kw):
        self.calls.append("register")
        if self.calls.count("register") < 3:
            raise ClientError({"Error": {"Code": "LimitExceededException",
                                         "Message": "Only 5 consumers can be created at the "
                                                    "same time"}}, "RegisterStreamConsumer")
        return {}

    def describe_stream_consumer(self, **kw):
        self.calls.append("describe")
        status, self.status = self.status, "ACTIVE"
        return {"ConsumerDescription": {"ConsumerStatus": status, "ConsumerARN": "arn:c"}}


def test_registration_retries_while_five_consumers_are_creating():
    from streamslice.kinesis.consumers import register
    client, sleeps = FakeKinesis(), list[float]()
    assert register(client, "arn:s", "c", sleep=sleeps.append) == "arn:c"
    assert client.calls == ["register", "register", "register", "describe", "describe"]
    assert len(sleeps) == 3


@pytest.mark.parametrize("conn, expected", [
    # host and port as the URL, the schema field as its scheme, login/password as basic auth
    ({"conn_type": "http", "host": "registry", "port": 8081, "schema": "https",
      "login": "u", "password": "p"},
     {"url": "https://registry:8081", "basic.auth.user.info": "u:p"}),
    # a host with its scheme, no port; http when neither says
    ({"conn_type": "http", "host": "https://sr.example.com"}, {"url": "https://sr.example.com"}),
    ({"conn_type": "http", "host": "sr", "port": 8081}, {"url": "http://sr:8081"}),
    # the extra's client properties, by confluent-kafka's names; its own url and auth win
    ({"conn_type": "http", "host": "ignored", "login": "ignored", "extra": {
        "url": "https://a:1,https://b:1", "basic.auth.user.info": "x:y",
        "ssl.ca.location": "/ca.pem", "timeout": 3}},
     {"url": "https://a:1,https://b:1", "basic.auth.user.info": "x:y",
      "ssl.ca.location": "/ca.pem", "timeout": "3"}),
])
def test_a_registry_connection_becomes_schema_registry_properties(monkeypatch, conn, expected):
    """*format.registry.conn_id*: resolved in the task that plans or reads, never planned."""
    from streamslice.airflow.hooks import registry_properties
    from streamslice.config import parse_pipeline
    connection(monkeypatch, "sr", **conn)
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'b:1', topics: [t]}\n"
                         "format: {value: avro, registry: {conn_id: sr}, subject: s}\n")
    assert registry_properties(cfg.decode) == {f"schema.registry.{k}": v
                                               for k, v in expected.items()}
    assert cfg.decode.value.options["registry"] == {"kind": "confluent", "conn_id": "sr"}


def test_an_aws_connection_is_read_as_the_amazon_provider_reads_it(monkeypatch):
    """docs/aws.md's *Identity per process*: the amazon provider's extra (region_name,
    endpoint_url or service_config.<service>.endpoint_url, profile_name, role_arn with
    assume_role_kwargs, service_config.sts.endpoint_url) and its keys; the role is assumed by
    each process itself, so only its settings come out of here."""
    from streamslice.airflow.hooks import aws_properties
    from streamslice.errors import ConfigError
    connection(monkeypatch, "role_aws", "aws", login="AKIAEXAMPLE",
               password="wJalrEXAMPLE", extra={
            "region_name": "eu-west-1", "profile_name": "etl",
            "role_arn": "arn:aws:iam::123456789012:role/reader",
            "assume_role_kwargs": {"ExternalId": "ext-7", "RoleSessionName": "slices",
                                   "DurationSeconds": 3600},
            "service_config": {"kinesis": {"endpoint_url": "http://kinesis:4567"},
                               "glue": {"endpoint_url": "http://glue:5000"},
                               "sts": {"endpoint_url": "http://sts:5000"}}})
    assert aws_properties("role_aws") == {
        "region": "eu-west-1", "endpoint_url": "http://kinesis:4567", "profile": "etl",
        "role_arn": "arn:aws:iam::123456789012:role/reader", "external_id": "ext-7",
        "session_name": "slices", "session_duration": 3600,
        "sts_endpoint_url": "http://sts:5000", "access_key_id": "AKIAEXAMPLE",
        "secret_access_key": "wJalrEXAMPLE"}
    assert aws_properties("role_aws", service="glue")["endpoint_url"] == "http://glue:5000"
    # the pipeline's own region wins over the connection's, as a hook's region_name does
    assert aws_properties("role_aws", region="us-east-2")["region"] == "us-east-2"
    connection(monkeypatch, "web_aws", "aws", extra={
        "role_arn": "arn:aws:iam::123456789012:role/r",
        "assume_role_method": "assume_role_with_web_identity"})
    with pytest.raises(ConfigError, match="assume_role_method 'assume_role_with_web_identity' "
                                          "is not supported"):
        aws_properties("web_aws")
