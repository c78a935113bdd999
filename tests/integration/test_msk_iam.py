"""Amazon MSK IAM (SASL/OAUTHBEARER, AWS-signed tokens) against the local Kafka-protocol
broker: the confluent-kafka reader authenticates with tokens built in-process from a role
assumed through moto's STS.

noida-db accepts OAUTHBEARER but does not require or verify it, so a relay in front of it
records the bytes: the test reads the tokens out of the SaslAuthenticate requests and checks
what they sign (MSK's kafka-cluster:Connect, the region, the role session's key). No real MSK
listener verified a signature here.

noida-db answers SaslHandshake with error code 0 (mechanism accepted) but lists only PLAIN as
enabled. librdkafka (and the Java client) go by the error code; kafka-python 3.0.12 also
requires the requested mechanism in that list and gives up (UnsupportedSaslMechanismError),
which is why its OAUTHBEARER handshake never completed against noida-db. An MSK listener with
IAM lists OAUTHBEARER, so for kafka-python the relay adds it to the list (``advertise``), as
such a broker would answer; the rest of the exchange is the broker's own."""
import asyncio
import base64
import re
import struct
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

import pytest

from devtools.services import create_topic, free_port
from tests.support.kafka import producer

if TYPE_CHECKING:
    from streamslice.sources import Properties

pytestmark = pytest.mark.integration
ROLE = "arn:aws:iam::123456789012:role/msk-reader"


METADATA, FIND_COORDINATOR, SASL_HANDSHAKE = 3, 10, 17  # Kafka API keys


class Relay:
    """A TCP relay that keeps every byte the clients send. It gives the clients its own port
    as the broker's (in Metadata and FindCoordinator answers), so every connection they open
    goes through it. With ``advertise``, it adds that mechanism to the broker's SaslHandshake
    answers (see the module's note); with ``answer`` (error code, mechanisms) it answers
    SaslHandshake with those instead, as a broker with other mechanisms enabled would."""

    def __init__(self, upstream_port, advertise=None, answer=None):
        self.port, self.upstream, self.sent = free_port(), upstream_port, bytearray()
        self.advertise = advertise.encode() if advertise else None
        self.answer = answer
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port))
        ready.set()
        self.loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self.loop)  # connections still open: close them quietly
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

    async def _handle(self, cr, cw):
        ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream)
        asked = {}  # correlation id → API key of this connection's requests
        broker = b"127.0.0.1" + struct.pack(">i", self.upstream)

        async def pipe(r, w, requests):
            try:
                while True:  # one Kafka frame at a time: int32 size, then the frame
                    size = await r.readexactly(4)
                    frame = await r.readexactly(struct.unpack(">i", size)[0])
                    if requests:
                        self.sent.extend(size + frame)
                        api_key, _, cid = struct.unpack(">hhi", frame[:8])
                        asked[cid] = api_key
                    else:
                        api_key = asked.pop(struct.unpack(">i", frame[:4])[0], None)
                        if api_key in (METADATA, FIND_COORDINATOR):  # host, then int32 port
                            frame = frame.replace(broker, b"127.0.0.1" +
                                                  struct.pack(">i", self.port))
                        elif api_key == SASL_HANDSHAKE and (self.advertise or self.answer):
                            frame = self._advertised(frame)
                        size = struct.pack(">i", len(frame))
                    w.write(size + frame)
                    await w.drain()
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                w.close()
        await asyncio.gather(pipe(cr, uw, True), pipe(ur, cw, False))

    def _advertised(self, frame):
        """A SaslHandshake response (correlation id, error code, mechanisms) listing
        ``advertise`` too."""
        cid, error, count = struct.unpack(">ihi", frame[:10])
        mechanisms, at = [], 10
        for _ in range(count):
            (n,) = struct.unpack(">h", frame[at:at + 2])
            mechanisms.append(frame[at + 2:at + 2 + n])
            at += 2 + n
        if self.answer:
            error, mechanisms = self.answer[0], [m.encode() for m in self.answer[1]]
        elif self.advertise not in mechanisms:
            mechanisms.append(self.advertise)
        return struct.pack(">ihi", cid, error, len(mechanisms)) + b"".join(
            struct.pack(">h", len(m)) + m for m in mechanisms)

    def tokens(self):
        return [m.decode() for m in re.findall(rb"auth=Bearer ([A-Za-z0-9_-]+)", self.sent)]

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


def signed_url(token):
    return urlparse(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())


def test_planner_and_reader_authenticate_with_role_signed_tokens(broker, sns_queue, monkeypatch):
    from streamslice.aws import AwsAuth
    from streamslice.kafka.admin import KafkaAdmin
    from streamslice.kafka.fetch import fetch_confluent
    from streamslice.kafka.msk_iam import AUTH_KEY, with_msk_iam
    from streamslice.kafka.split import KafkaSplit
    moto = sns_queue[0]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "base-key")  # the process's default chain
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "base-secret")
    topic = f"msk-{time.time_ns()}"
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for i in range(20):
            p.produce(topic, b"m%d" % i, partition=0)
    relay = Relay(broker.port, advertise="OAUTHBEARER")
    try:
        props = with_msk_iam({"bootstrap.servers": f"127.0.0.1:{relay.port}",
                              "security.protocol": "SASL_PLAINTEXT"},
                             AwsAuth(region="eu-west-1", role_arn=ROLE,
                                     sts_endpoint_url=moto.endpoint, session_name="msk"))
        assert props["sasl.mechanism"] == "OAUTHBEARER" and "token" not in str(props)
        assert set(props) == {"bootstrap.servers", "security.protocol", "sasl.mechanism",
                              AUTH_KEY}  # what a plan or Spark option could hold: no secret
        # kafka-python, the plan task's client, with its token provider from the same props
        with KafkaAdmin(props) as admin:
            ends = admin.end_offsets(admin.partitions(topic))
        assert list(ends.values()) == [20]
        planned = len(relay.tokens())
        assert planned >= 1, "kafka-python sent no token"
        split = KafkaSplit(id=0, topic=topic, partition=0, start=0, stop=20)
        rows = sum(len(batch.offsets) for batch in fetch_confluent(split, props))
        assert rows == 20
        tokens = relay.tokens()
        assert len(tokens) > planned, "the confluent-kafka reader sent no token"
        for token in tokens:
            url = signed_url(token)
            query = parse_qs(url.query)
            assert url.hostname == "kafka.eu-west-1.amazonaws.com"
            assert query["Action"] == ["kafka-cluster:Connect"]
            key, _, scope = query["X-Amz-Credential"][0].partition("/")
            assert key.startswith("ASIA") and scope.startswith(tuple("0123456789"))
            assert "/eu-west-1/kafka-cluster/aws4_request" in query["X-Amz-Credential"][0]
            assert query["X-Amz-Security-Token"]  # the assumed role's session
    finally:
        relay.stop()


def test_librdkafka_asks_for_a_new_token_before_the_old_one_expires(broker, monkeypatch):
    """Tokens that expire in 3 s: librdkafka calls the callback again at ~80% of that, while
    the consumer keeps polling (a read longer than a token's life)."""
    from confluent_kafka import Consumer

    from streamslice.aws import AwsAuth
    from streamslice.kafka.msk_iam import MskIamTokens
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    real, calls = MskIamTokens(AwsAuth(region="us-east-1")), []

    def short_lived(config):
        token, expiry = real(config)
        assert expiry <= time.time() + 900
        calls.append(time.monotonic())
        return token, time.time() + 3
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "msk-refresh",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                         "oauth_cb": short_lived})
    try:
        deadline = time.monotonic() + 30
        while len(calls) < 3 and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(calls) >= 3, f"the token was asked for {len(calls)} times in 30 s"
        # at ~80% of each token's 3 s (plus the 0.2 s poll that serves the callback)
        assert all(b - a < 3.5 for a, b in zip(calls, calls[1:])), calls
    finally:
        consumer.close()


def test_a_mechanism_the_broker_does_not_offer_is_named(broker, monkeypatch):
    """kafka-python gives up on a SaslHandshake answer without its mechanism and retried until
    the planner said no broker answered. Now the plan (and kafka-python's read) fails at once
    as a config error saying which mechanism the broker refused and which it offers: against
    the local broker (no error, only PLAIN listed) and a broker answering as Apache Kafka does
    when a mechanism is not enabled (UNSUPPORTED_SASL_MECHANISM and its enabled list)."""
    from streamslice.aws import AwsAuth
    from streamslice.errors import ConfigError
    from streamslice.kafka.admin import KafkaAdmin
    from streamslice.kafka.fetch import fetch_kafka_python
    from streamslice.kafka.msk_iam import with_msk_iam
    from streamslice.kafka.split import KafkaSplit
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    iam = with_msk_iam({"bootstrap.servers": broker.bootstrap,
                        "security.protocol": "SASL_PLAINTEXT"}, AwsAuth(region="eu-west-1"))
    with pytest.raises(ConfigError) as err:
        KafkaAdmin(iam, timeout_ms=2000)
    assert str(err.value) == (
        f"Kafka at {broker.bootstrap} does not offer SASL mechanism OAUTHBEARER "
        "(sasl.mechanism, which kafka.auth: msk_iam sets): its SaslHandshake answer lists "
        "PLAIN; use one of those, or enable it on the brokers' listener")
    relay = Relay(broker.port, answer=(33, ["PLAIN", "SCRAM-SHA-512"]))
    try:
        scram: Properties = {"bootstrap.servers": f"127.0.0.1:{relay.port}",
                 "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                 "sasl.username": "u", "sasl.password": "p"}
        refused = (f"Kafka at 127.0.0.1:{relay.port} does not offer SASL mechanism "
                   "SCRAM-SHA-256 (sasl.mechanism) (UNSUPPORTED_SASL_MECHANISM): its "
                   "SaslHandshake answer lists PLAIN, SCRAM-SHA-512")
        with pytest.raises(ConfigError, match=re.escape(refused)):
            KafkaAdmin(scram, timeout_ms=2000)
        with pytest.raises(ConfigError, match=re.escape(f"t:0: {refused}")):
            list(fetch_kafka_python(KafkaSplit(0, "t", 0, 0, 5), scram))
    finally:
        relay.stop()
