"""The registry clients against registries over HTTP in other processes: the local Confluent
Schema Registry (devtools/schema_registry.py; basic auth, TLS, injected slowness and
failures) and moto_server's Glue API. Records are written by the libraries' own serializers
(confluent-kafka's AvroSerializer, the aws-glue-schema-registry package's KafkaSerializer)."""
import base64
import datetime
import json
import ssl

import pytest

from devtools.services import SchemaRegistry
from streamslice.codecs.avro import AvroCodec
from streamslice.codecs.framed import Framed
from streamslice.errors import ConfigError, SourceError
from streamslice.schema_registry import open_registry
from streamslice.schema_registry.base import UnknownSchema
from streamslice.schema_registry.wire import parse

V1 = {"type": "record", "name": "Trip", "fields": [{"name": "id", "type": "long"}]}
V2 = {"type": "record", "name": "Trip", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"],
                                     "default": None}]}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return folder


@pytest.fixture(scope="module")
def confluent(tls):
    """A registry with basic auth and TLS: what a production registry asks of clients."""
    with SchemaRegistry(user="reader:s3cret", cert=tls / "cert.pem", key=tls / "key.pem") as sr:
        yield sr


def confluent_props(tls, **more):
    return {"basic.auth.user.info": "reader:s3cret", "ssl.ca.location": str(tls / "cert.pem"),
            **more}


def serialize(sr, tls, schema, record, subject_topic="trips"):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient({"url": sr.url, **confluent_props(tls)})
    return AvroSerializer(client, json.dumps(schema))(
        record, SerializationContext(subject_topic, MessageField.VALUE))


def test_confluent_ids_versions_and_errors(confluent, tls):
    one = serialize(confluent, tls, V1, {"id": 1})
    two = serialize(confluent, tls, V2, {"id": 2, "note": "n"})
    registry = open_registry({"kind": "confluent", "url": confluent.url}, confluent_props(tls))
    latest = registry.version("trips-value", None)
    assert (latest.version, json.loads(latest.text)) == (2, V2)
    assert json.loads(registry.version("trips-value", 1).text) == V1
    codec = AvroCodec(latest.text)
    columns, errors = Framed(codec, registry).decode([one, two, one[:1] + b"\x00\x00\x27\x0f"
                                                      + one[5:]])
    assert columns[0].to_pylist()[:2] == [1, 2] and columns[1].to_pylist()[:2] == [None, "n"]
    assert errors == {2: f"schema id 9999 is not in {registry.where}"}
    with pytest.raises(ConfigError, match="subject 'nope' version latest does not exist"):
        registry.version("nope", None)
    with pytest.raises(ConfigError, match="subject 'trips-value' version 7 does not exist"):
        registry.version("trips-value", 7)
    wrong = open_registry({"kind": "confluent", "url": confluent.url},
                          confluent_props(tls, **{"basic.auth.user.info": "reader:wrong"}))
    with pytest.raises(ConfigError, match="refused the credentials"):
        wrong.version("trips-value", None)
    untrusted = open_registry({"kind": "confluent", "url": confluent.url},
                              {"basic.auth.user.info": "reader:s3cret"})
    with pytest.raises(SourceError, match="cannot be reached.*CERTIFICATE_VERIFY_FAILED"):
        untrusted.version("trips-value", None)


def test_confluent_guid_frames(confluent, tls):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient({"url": confluent.url, **confluent_props(tls)})
    ser = AvroSerializer(client, json.dumps(V1), conf={
        "schema.id.serializer": lambda payload, ctx, sid: sid.guid_to_bytes() + payload})
    data = ser({"id": 5}, SerializationContext("guids", MessageField.VALUE))
    assert parse(data).kind == "confluent-guid"
    registry = open_registry({"kind": "confluent", "url": confluent.url}, confluent_props(tls))
    columns, errors = Framed(AvroCodec(json.dumps(V1)), registry).decode([data])
    assert errors == {} and columns[0].to_pylist() == [5]


def test_confluent_down_or_slow_is_retryable(tls):
    with SchemaRegistry(user="reader:s3cret", cert=tls / "cert.pem",
                        key=tls / "key.pem") as sr:
        data = serialize(sr, tls, V1, {"id": 1}, "slow")
        props = confluent_props(tls, timeout="1", **{"max.retries": "0"})
        slow = open_registry({"kind": "confluent", "url": sr.url}, props)
        sr.faults(delay_s=3)
        with pytest.raises(SourceError, match="cannot be reached for schema id 1: "):
            slow.by_frame("confluent", 1)
        for status in (503, 429):  # failing, or throttling: Airflow retries it
            sr.faults(status=status)
            with pytest.raises(SourceError, match=rf"failed for subject 'slow-value' .* "
                                                  rf"\({status}"):
                slow.version("slow-value", None)
        sr.faults()
        assert slow.by_frame("confluent", 1).text == json.dumps(V1)  # errors are not cached
    with pytest.raises(SourceError, match="Connection refused"):
        Framed(AvroCodec(json.dumps(V1)), open_registry(
            {"kind": "confluent", "url": sr.url}, props)).decode([data.replace(
                b"\x00\x00\x00\x01", b"\x00\x00\x00\x02", 1)])


@pytest.fixture(scope="module")
def glue(sns_queue):
    """Glue on the session's moto_server (the alert tests' one)."""
    moto = sns_queue[0]
    client = moto.client("glue")
    client.create_registry(RegistryName="streams")
    yield moto, client
    client.delete_registry(RegistryId={"RegistryName": "streams"})


def glue_props(moto):
    return {"region": "us-east-1", "endpoint_url": moto.endpoint, "access_key_id": "test",
            "secret_access_key": "test"}


def test_glue_versions_and_records_from_the_aws_serializer(glue):
    from aws_schema_registry import DataAndSchema, SchemaRegistryClient
    from aws_schema_registry.adapter.kafka import KafkaSerializer
    from aws_schema_registry.avro import AvroSchema
    moto, client = glue
    from aws_schema_registry import codec
    lib = SchemaRegistryClient(client, registry_name="streams", wait_interval_seconds=0.01)
    ser = KafkaSerializer(lib, compatibility_mode="BACKWARD",
                          schema_naming_strategy=lambda topic, is_key, schema: "trips")
    records = [ser.serialize("trips", DataAndSchema({"id": 1}, AvroSchema(V1))),
               ser.serialize("trips", DataAndSchema({"id": 2, "note": "z"}, AvroSchema(V2)))]
    # the same records zlib-compressed by the library's codec (its serializer has no switch)
    records += [codec.encode(*codec.decode(r), compression=True) for r in records]
    assert records[2][1] == 5  # the zlib compression byte
    registry = open_registry({"kind": "glue", "registry_name": "streams"}, glue_props(moto))
    latest = registry.version("trips", None)
    assert (latest.version, json.loads(latest.text)) == (2, V2)
    assert json.loads(registry.version("trips", 1).text) == V1
    columns, errors = Framed(AvroCodec(latest.text), registry).decode(
        [*records, records[0][:2] + b"\x00" * 16 + records[0][18:]])
    assert columns[0].to_pylist()[:4] == [1, 2, 1, 2]
    assert columns[1].to_pylist()[:4] == [None, "z", None, "z"]
    assert list(errors) == [4] and "00000000-0000-0000-0000-000000000000 is not in" in errors[4]
    with pytest.raises(ConfigError, match="schema 'nope' version latest does not exist"):
        registry.version("nope", None)
    with pytest.raises(UnknownSchema):
        registry.by_frame("confluent", 3)


def test_glue_unreachable_is_retryable(glue):
    moto, _ = glue
    props = {**glue_props(moto), "endpoint_url": "http://127.0.0.1:9"}
    with pytest.raises(SourceError, match="cannot be reached"):
        open_registry({"kind": "glue", "registry_name": "streams"}, props).version("trips", 1)


def test_tls_context_is_real(confluent, tls):
    """The registry serves TLS only: a plain-HTTP client gets nothing from it."""
    import urllib.request
    ctx = ssl.create_default_context(cafile=str(tls / "cert.pem"))
    req = urllib.request.Request(f"{confluent.url}/subjects")
    with pytest.raises(urllib.error.HTTPError, match="401"):
        urllib.request.urlopen(req, context=ctx, timeout=10)


def test_protobuf_and_json_schema_formats_through_the_registry(confluent, tls):
    """Pipeline files → the planned specs (reader schemas pinned) → executors' decoders,
    against the registry the libraries' Protobuf and JSON Schema serializers wrote to."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import descriptor_pb2
    from google.protobuf.message_factory import GetMessageClass

    from streamslice.codecs.protobuf import new_pool
    from streamslice.config.pipeline import parse_pipeline
    from streamslice.reading.decode import Decoder
    client = SchemaRegistryClient({"url": confluent.url, **confluent_props(tls)})
    ctx = SerializationContext("events", MessageField.VALUE)
    pool = new_pool()
    pool.Add(descriptor_pb2.FileDescriptorProto(
        name="ev.proto", package="ev", syntax="proto3", message_type=[
            descriptor_pb2.DescriptorProto(name="Event", field=[
                descriptor_pb2.FieldDescriptorProto(name="id", number=1, type=3, label=1),
                descriptor_pb2.FieldDescriptorProto(name="kind", number=2, type=9, label=1)])]))
    event = GetMessageClass(pool.FindMessageTypeByName("ev.Event"))
    proto = ProtobufSerializer(event, client, {"use.deprecated.format": False})(
        event(id=5, kind="click"), SerializationContext("pb", MessageField.VALUE))
    schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}}}}
    js = JSONSerializer(json.dumps(schema), client)
    good = js({"id": 1, "at": "2024-05-01T00:00:00Z", "tags": ["a"]}, ctx)
    props = {f"schema.registry.{k}": v for k, v in confluent_props(tls).items()}
    for fmt, subject, data, check in [
            ("protobuf", "pb-value", [proto], lambda cols: cols[1].to_pylist() == ["click"]),
            ("json_schema", "events-value", [good, good[:5] + b'{"id": "x"}'],
             lambda cols: cols[0].to_pylist()[0] == 1)]:
        cfg = parse_pipeline(f"""
mode: incremental
kafka: {{bootstrap_servers: "127.0.0.1:9", topics: [t]}}
format:
  value: {fmt}
  registry: {{url: "{confluent.url}"}}
  subject: {subject}
""")
        decode = cfg.decode.prepared(props).to_dict()
        assert decode["value"]["options"]["reader"]["subject"] == subject
        columns, errors = Decoder.from_dict(decode, props).decode_values(data)
        assert check(columns), (fmt, columns)
        if fmt == "json_schema":
            assert errors == {1: "field 'id': expected bigint, got \"x\""} or \
                "field 'id'" in errors[1]


def header_serializers(client):
    """confluent-kafka's Avro, Protobuf and JSON Schema serializers, each putting the schema
    GUID in a record header (``header_schema_id_serializer``) and writing the bare payload;
    and each format's first record, whose bare payload a prefix reader misreads."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from google.protobuf import descriptor_pb2
    from google.protobuf.message_factory import GetMessageClass

    from streamslice.codecs.protobuf import new_pool
    conf = {"schema.id.serializer": header_schema_id_serializer}
    pool = new_pool()
    pool.Add(descriptor_pb2.FileDescriptorProto(
        name="hdr.proto", package="hdr", syntax="proto3", message_type=[
            descriptor_pb2.DescriptorProto(name="Event", field=[
                descriptor_pb2.FieldDescriptorProto(name="id", number=1, type=3, label=1)])]))
    event = GetMessageClass(pool.FindMessageTypeByName("hdr.Event"))
    js = {"type": "object", "properties": {"id": {"type": "integer"}}}
    proto = ProtobufSerializer(event, client, {**conf, "use.deprecated.format": False})
    return {"avro": (AvroSerializer(client, json.dumps(V1), conf=conf), dict),
            "protobuf": (proto, lambda **r: event(**r)),
            "json_schema": (JSONSerializer(json.dumps(js), client, conf=conf), dict)}


@pytest.mark.integration
@pytest.mark.parametrize("value, key", [("avro", "protobuf"), ("protobuf", "json_schema"),
                                        ("json_schema", "avro")])
def test_schema_ids_in_record_headers_through_the_broker(broker, confluent, tls, value, key):
    """Records whose schema GUIDs confluent-kafka's serializers put in the
    ``__value_schema_id`` / ``__key_schema_id`` headers, through the real broker: every one
    decodes (Avro id 0 is a bare payload starting 0x00, read before as "schema id 174…";
    Protobuf's starts 0x08, read as "unknown magic byte"), beside records framed the usual
    way. A header naming a GUID the registry lacks is that record's dead letter."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    from devtools.services import create_topic
    from streamslice.config.pipeline import parse_pipeline
    from streamslice.kafka.reader import KafkaSplitReader
    from streamslice.kafka.split import KafkaSplit
    from streamslice.reading.decode import Decoder
    from tests.support.kafka import producer
    from tests.support.pipelines import unique
    client = SchemaRegistryClient({"url": confluent.url, **confluent_props(tls)})
    sers = header_serializers(client)
    topic = unique("hdr")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for i in range(4):
            headers: list = [("trace", b"t%d" % i)]
            (kser, kmake), (vser, vmake) = sers[key], sers[value]
            k = kser(kmake(id=100 + i), SerializationContext(topic, MessageField.KEY, headers))
            v = vser(vmake(id=i), SerializationContext(topic, MessageField.VALUE, headers))
            if i == 3:  # a GUID the registry does not have
                headers = [(n, b"\x01" + b"\x11" * 16 + h[17:] if n == "__value_schema_id" else h)
                           for n, h in headers]
            p.produce(topic, key=k, value=v, headers=headers, partition=0)
    props = {f"schema.registry.{k}": v for k, v in confluent_props(tls).items()}
    cfg = parse_pipeline(f"""
mode: incremental
kafka: {{bootstrap_servers: "{broker.bootstrap}", topics: [{topic}]}}
format:
  value: {value}
  key: {key}
  registry: {{url: "{confluent.url}"}}
  subject: {topic}-value
  key_subject: {topic}-key
  flatten: false
""")
    decoder = Decoder.from_dict(cfg.decode.prepared(props).to_dict(), props)
    reader = KafkaSplitReader(KafkaSplit(0, topic, 0, 0, 4),
                              properties={"bootstrap.servers": broker.bootstrap},
                              decoder=decoder)
    rows = [r for b in reader.batches() for r in b.to_pylist()]
    # (Protobuf's id 0 is its default: an empty payload, read as null as Spark's
    # from_protobuf reads it without emit.default.values)
    zero = None if value == "protobuf" else 0
    assert [(r["offset"], r["key"]["id"], r["value"]["id"]) for r in rows] == \
        [(0, 100, zero), (1, 101, 1), (2, 102, 2)]
    dead = [r for b in reader._dead for r in b.to_pylist()]
    assert [d["offset"] for d in dead] == [3]
    assert dead[0]["error"] == ("schema GUID 11111111-1111-1111-1111-111111111111 is not in "
                                f"the Confluent Schema Registry at {confluent.url}")


def test_a_protobuf_subject_of_two_messages_without_message_fails_the_plan(confluent, tls):
    """#28: a subject whose schema holds two messages, read without format.message, read
    the first and dead-lettered every record of the second. The plan fails listing them;
    naming the message reads it."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from google.protobuf import descriptor_pb2 as d

    from streamslice.errors import ConfigError
    from tests.support.pipelines import parsed
    client = SchemaRegistryClient({"url": confluent.url, **confluent_props(tls)})
    def message(name, field, typ):
        return d.DescriptorProto(name=name, field=[
            d.FieldDescriptorProto(name=field, number=1, type=typ, label=1)])
    two = d.FileDescriptorProto(name="two.proto", package="two", syntax="proto3", message_type=[
        message("Click", "id", 3), message("View", "page", 9)])
    # as confluent-kafka's ProtobufSerializer registers a schema: the descriptor, base64
    client.register_schema("two-value", Schema(
        base64.b64encode(two.SerializeToString()).decode(), "PROTOBUF"))
    props = {f"schema.registry.{k}": v for k, v in confluent_props(tls).items()}

    def decode(**fmt):
        return parsed("kafka", {"bootstrap_servers": "127.0.0.1:9", "topics": ["t"]}, format={
            "value": "protobuf", "registry": {"url": confluent.url}, "subject": "two-value",
            **fmt}).decode.prepared(props)
    with pytest.raises(ConfigError, match=r"format protobuf: subject 'two-value' version 1 "
                                          r"\(schema id \d+\) holds 2 messages \(two\.Click, "
                                          r"two\.View\): name the one the records hold "
                                          r"\(format\.message"):
        decode()
    assert decode(message="two.View").value.schema == "page STRING"
