"""The SaslHandshake question the planner asks once kafka-python's bootstrap has failed: the
request and answer byte for byte as kafka-python's own protocol classes write and read them,
and the one line said for each answer (no broker here: ``ask`` is faked to cover our
wording; the real exchange is tested against the local broker in test_msk_iam.py)."""
import io
import struct

import pytest
from kafka.protocol.old.api import RequestHeader
from kafka.protocol.old.sasl_handshake import SaslHandshakeRequest_v1, SaslHandshakeResponse_v1

from streamslice.kafka import handshake
from streamslice.kafka.handshake import Handshake, parse_response, refusal, request
from streamslice.kafka.msk_iam import AUTH_KEY
from streamslice.sources import Properties
from tests.support.checks import present


def test_the_request_is_kafkas_saslhandshake_v1():
    body = SaslHandshakeRequest_v1(mechanism="OAUTHBEARER")
    header = RequestHeader(api_key=17, api_version=1, correlation_id=5,
                           client_id="streamslice")
    frame = header.encode() + body.encode()
    assert request("OAUTHBEARER", 5) == struct.pack(">i", len(frame)) + frame
    assert SaslHandshakeRequest_v1.decode(io.BytesIO(frame[len(header.encode()):])) \
        .mechanism == "OAUTHBEARER"


@pytest.mark.parametrize("error_code, mechanisms", [
    (33, ["PLAIN", "SCRAM-SHA-512"]), (0, ["PLAIN"]), (0, []), (33, ["OAUTHBEARER"])])
def test_the_answer_is_read_as_kafka_writes_it(error_code, mechanisms):
    body = SaslHandshakeResponse_v1(error_code=error_code, mechanisms=mechanisms).encode()
    assert parse_response(struct.pack(">i", 9) + body) == (9, error_code, tuple(mechanisms))


SASL: Properties = {"bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL",
                    "sasl.mechanism": "OAUTHBEARER"}
KWARGS: dict[str, object] = {"bootstrap_servers": ["b1:9092", "b2:9092"],
                             "security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}


@pytest.mark.parametrize("answers, expected", [
    ({"b1:9092": Handshake("b1:9092", 33, ("PLAIN", "SCRAM-SHA-512"))},
     "Kafka at b1:9092 does not offer SASL mechanism OAUTHBEARER (sasl.mechanism) "
     "(UNSUPPORTED_SASL_MECHANISM): its SaslHandshake answer lists PLAIN, SCRAM-SHA-512; use "
     "one of those, or enable it on the brokers' listener"),
    ({"b2:9092": Handshake("b2:9092", 0, ("PLAIN",))},  # b1 unreachable: the next is asked
     "Kafka at b2:9092 does not offer SASL mechanism OAUTHBEARER (sasl.mechanism): its "
     "SaslHandshake answer lists PLAIN; use one of those, or enable it on the brokers' "
     "listener"),
    ({"b1:9092": Handshake("b1:9092", 0, ("OAUTHBEARER", "PLAIN"))}, None),  # offered
    ({}, None),  # nobody answers: the planner says no broker answered
])
def test_what_a_refusal_says(monkeypatch, answers, expected):
    asked = []

    def ask(server, mechanism, kwargs, timeout_s=5.0):
        asked.append((server, mechanism))
        return answers.get(server)
    monkeypatch.setattr(handshake, "ask", ask)
    assert refusal(SASL, KWARGS) == expected
    assert asked[0] == ("b1:9092", "OAUTHBEARER")


def test_msk_iam_is_named_and_plain_connections_are_not_asked(monkeypatch):
    monkeypatch.setattr(handshake, "ask",
                        lambda server, *a, **k: Handshake(server, 33, ("PLAIN",)))
    assert "(sasl.mechanism, which kafka.auth: msk_iam sets) (UNSUPPORTED_SASL_MECHANISM)" in \
        present(refusal({**SASL, AUTH_KEY: "{}"}, KWARGS))
    assert refusal({}, {**KWARGS, "security_protocol": "SSL"}) is None
