"""MSK IAM detection and configuration (pure logic)."""
import json

import pytest

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.kafka.msk_iam import AUTH_KEY, detected, msk_region
from tests.support.connections import connection


@pytest.mark.parametrize("servers, region", [
    ("b-1.c1.abc123.c2.kafka.us-east-1.amazonaws.com:9098", "us-east-1"),
    ("b-1.x.kafka.eu-west-2.amazonaws.com:9098,b-2.x.kafka.eu-west-2.amazonaws.com:9098",
     "eu-west-2"),
    ("boot-abcd.c1.kafka-serverless.ap-southeast-1.amazonaws.com:9098", "ap-southeast-1"),
    ("kafka.example.com:9092", None),
    ("b-1.x.kafka.us-east-1.amazonaws.com:9098,other:9092", None),  # not all MSK
])
def test_msk_brokers_and_their_region(servers, region):
    assert msk_region(servers) == region


def test_a_connection_with_oauthbearer_to_msk_means_msk_iam(monkeypatch):
    from streamslice.airflow.hooks import source_properties
    servers = "b-1.c.kafka.us-east-1.amazonaws.com:9098"
    assert detected({"bootstrap.servers": servers, "sasl.mechanism": "OAUTHBEARER"})
    assert not detected({"bootstrap.servers": servers, "sasl.mechanism": "SCRAM-SHA-512"})
    connection(monkeypatch, "msk", "kafka", extra={
        "bootstrap.servers": servers, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER"})
    cfg = parse_pipeline("mode: incremental\nkafka: {conn_id: msk, topics: [t]}\n"
                         "output: {path: /x}\n")
    props = source_properties(cfg.source)
    assert json.loads(str(props[AUTH_KEY])) == {"region": "us-east-1"}


def test_auth_msk_iam_in_the_pipeline_file():
    cfg = parse_pipeline("""
mode: incremental
kafka:
  bootstrap_servers: b-1.c.kafka.eu-central-1.amazonaws.com:9098
  topics: [t]
  auth: msk_iam
  aws: {role_arn: "arn:aws:iam::123456789012:role/r", session_name: etl}
output: {path: /x}
""")
    props = cfg.source.client_properties()
    assert props["security.protocol"] == "SASL_SSL" and props["sasl.mechanism"] == "OAUTHBEARER"
    assert json.loads(str(props[AUTH_KEY])) == {"region": "eu-central-1", "session_name": "etl",
                                           "role_arn": "arn:aws:iam::123456789012:role/r"}
    with pytest.raises(ConfigError, match="kafka.aws: is only used with auth: msk_iam"):
        parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'h:1', topics: [t], "
                       "aws: {region: x}}\noutput: {path: /x}\n")
    with pytest.raises(ConfigError, match="auth msk_iam needs a region"):
        parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'h:1', topics: [t], "
                       "auth: msk_iam}\noutput: {path: /x}\n").source.client_properties()


def test_kafka_python_gets_a_token_provider():
    from kafka.net.sasl.oauth import AbstractTokenProvider

    from streamslice.kafka.properties import kafka_python_kwargs
    kw = kafka_python_kwargs({"bootstrap.servers": "h:1", "sasl.mechanism": "OAUTHBEARER",
                              AUTH_KEY: json.dumps({"region": "us-east-1"})})
    assert isinstance(kw["sasl_oauth_token_provider"], AbstractTokenProvider)
    assert kw["sasl_mechanism"] == "OAUTHBEARER" and AUTH_KEY not in kw
