"""The kinesis block: native keys, Flink consumer properties mapped onto them, clear errors."""
import re

import pytest

from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from streamslice.kinesis.positions import ArrivedBefore, AtTimestamp

NATIVE = """\
mode: incremental
kinesis:
  stream: taxi
  region: eu-west-1
  endpoint_url: http://127.0.0.1:4567
  start: {AT_TIMESTAMP: "2016-04-04T19:58:46.480-00:00"}
  reader: efo
  efo:
    consumer_name: my-efo
    registration: keep
  polling:
    max_records: 500
    interval: 100ms
  retries:
    get_records: {max_retries: 5, backoff_base: 50ms}
output:
  path: /lake
"""

FLINK = """\
mode: incremental
kinesis:
  stream: taxi
  flink_properties:
    aws.region: eu-west-1
    aws.endpoint: http://127.0.0.1:4567
    flink.stream.initpos: AT_TIMESTAMP
    flink.stream.initpos.timestamp: "2016-04-04T19:58:46.480-00:00"
    flink.stream.recordpublisher: EFO
    flink.stream.efo.consumername: my-efo
    flink.stream.efo.registration: EAGER
    flink.shard.getrecords.maxrecordcount: 500
    flink.shard.getrecords.intervalmillis: 100
    flink.shard.getrecords.maxretries: 5
    flink.shard.getrecords.backoff.base: 50
output:
  path: /lake
"""


def parse(text):
    return parse_pipeline(text, file="k.yaml", default_name="k")


def test_flink_properties_map_to_the_native_config():
    native, flink = parse(NATIVE).source, parse(FLINK).source
    assert flink == native
    assert native.start == AtTimestamp(1459799926480)
    assert native.polling.backoff["get_records"].max_retries == 5


@pytest.mark.parametrize("key, value, message", [
    ("flink.shard.discovery.intervalmillis", "10000",
     "flink.shard.discovery.intervalmillis is not supported: shards are listed once per plan"),
    ("flink.stream.initpos", "EARLIEST", "flink.stream.initpos: 'EARLIEST' is not one of"),
    ("flink.stream.efo.registration", "SOMETIMES", "is not LAZY, EAGER or NONE"),
    ("flink.partition.discovery", "x", "flink.partition.discovery is not a supported Flink"),
    ("aws.credentials.provider", "WEB_IDENTITY_TOKEN", "aws.credentials.provider: "
                                                        "'WEB_IDENTITY_TOKEN' is not supported"),
])
def test_unsupported_flink_keys_are_named(key, value, message):
    lines = [ln for ln in FLINK.splitlines() if not ln.startswith(f"    {key}:")]
    at = lines.index("    aws.region: eu-west-1") + 1
    text = "\n".join(lines[:at] + [f"    {key}: {value}"] + lines[at:]) + "\n"
    with pytest.raises(ConfigError, match=message) as info:
        parse(text)
    assert str(info.value).startswith("k.yaml:4: kinesis.flink_properties:")


def test_lazy_is_per_run_and_none_needs_an_arn():
    text = FLINK.replace("EAGER", "LAZY")
    assert parse(text).source.efo_registration == "per_run"
    with pytest.raises(ConfigError, match="registration none needs a consumer ARN for stream "
                                          "'taxi'"):
        parse(FLINK.replace("EAGER", "NONE"))
    arn = "arn:aws:kinesis:eu-west-1:1:stream/taxi/consumer/c:1"
    text = FLINK.replace("EAGER", "NONE") + ""
    text = text.replace("    flink.stream.efo.registration: NONE\n",
                        f"    flink.stream.efo.registration: NONE\n"
                        f"    flink.stream.efo.consumerarn.taxi: {arn}\n")
    assert parse(text).source.efo_consumer_arns == {"taxi": arn}


@pytest.mark.parametrize("change, message", [
    (("start: {AT_TIMESTAMP", "start: {AT_TIMES"), "kinesis.start: {'AT_TIMES"),
    (("reader: efo", "reader: fanout"), "kinesis.reader: 'fanout' is not one of: polling, efo"),
    (("max_records: 500", "max_records: 20000"), "kinesis.polling.max_records: must be at most"),
    (("get_records:", "getrecords:"), "kinesis.retries.getrecords: unknown API 'getrecords'"),
    (("  stream: taxi\n", "  streams: []\n"), "kinesis.streams: must be a non-empty list"),
])
def test_native_errors(change, message):
    old, new = change
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("[", r"\[")):
        parse(NATIVE.replace(old, new, 1))


def test_interval_mode_reads_by_arrival_time():
    src = parse("""\
mode: interval
schedule: 10m
start_date: 2024-05-01T00:00:00Z
kinesis:
  stream: taxi
output:
  path: /lake
""").source
    assert src.start == AtTimestamp("data_interval_start")
    assert src.stop == ArrivedBefore("data_interval_end")


@pytest.mark.parametrize("key, value, message", [
    ("flink.shard.getrecords.maxrecordcount", "20000",
     "flink.shard.getrecords.maxrecordcount: must be at most 10000"),
    ("flink.shard.getrecords.backoff.expconst", "abc",
     "flink.shard.getrecords.backoff.expconst: 'abc' is not a number"),
    ("flink.stream.initpos.timestamp", "yesterday",
     "flink.stream.initpos.timestamp: 'yesterday' does not match the date format"),
    # every other key's value is checked when the file is validated, not when the plan first
    # calls AWS, and named as the user wrote it
    ("aws.region", "not a region", "aws.region: 'not a region' is not an AWS region name"),
    ("aws.endpoint", "not a url", "aws.endpoint: 'not a url' is not an endpoint URL"),
    ("aws.endpoint", "ftp://kinesis", "aws.endpoint: 'ftp://kinesis' is not an endpoint URL"),
    ("aws.endpoint", "http://host:99999", "aws.endpoint: 'http://host:99999' is not an"),
    ("flink.shard.getrecords.intervalmillis", "-1",
     "flink.shard.getrecords.intervalmillis: -1 is negative; give milliseconds, 0 or more"),
    ("flink.shard.getrecords.intervalmillis", "1s",
     "flink.shard.getrecords.intervalmillis: '1s' is not a whole number"),
    ("flink.shard.getrecords.maxrecordcount", "0",
     "flink.shard.getrecords.maxrecordcount: must be at least 1"),
    ("flink.shard.getrecords.maxretries", "-1",
     "flink.shard.getrecords.maxretries: must be at least 0"),
    ("flink.shard.getiterator.backoff.base", "-5",
     "flink.shard.getiterator.backoff.base: -5 is negative"),
    ("flink.list.shards.backoff.max", "abc", "flink.list.shards.backoff.max: 'abc' is not a"),
    ("flink.stream.describestreamconsumer.backoff.expconst", "0.5",
     "flink.stream.describestreamconsumer.backoff.expconst: 0.5 is outside 1..10"),
    ("flink.stream.efo.consumername", "bad name",
     "flink.stream.efo.consumername: 'bad name' may hold only letters"),
    ("flink.stream.efo.consumerarn.s", "not-an-arn",
     "flink.stream.efo.consumerarn.s: 'not-an-arn' is not a Kinesis stream consumer ARN"),
    ("flink.stream.efo.consumerarn.t",
     "arn:aws:kinesis:eu-west-1:123456789012:stream/t/consumer/c:1",
     "flink.stream.efo.consumerarn.t: names stream 't', which the pipeline does not read"),
    ("flink.stream.timestamp.date.format", "yyyy-MM-dd'T",
     "flink.stream.timestamp.date.format: unclosed quote in date format"),
    ("flink.stream.timestamp.date.format", "qqq",
     "flink.stream.timestamp.date.format: date format 'qqq': pattern letter 'q' is not"),
    ("aws.credentials.provider.role.arn", "x",
     "aws.credentials.provider.role.arn: 'x' is not an IAM role ARN"),
    ("aws.credentials.provider.role.externalId", "x",
     "aws.credentials.provider.role.externalId: 'x' is not an external id"),
    ("aws.credentials.provider.role.sessionName", "a b",
     "aws.credentials.provider.role.sessionName: 'a b' is not a role session name"),
    ("aws.credentials.provider.profile.name", "",
     "aws.credentials.provider.profile.name: must be a non-empty string"),
    ("aws.credentials.provider.basic.accesskeyid", "",
     "aws.credentials.provider.basic.accesskeyid: must be a non-empty string"),
])
def test_flink_key_errors_name_the_key_the_user_wrote(key, value, message):
    extra = "    flink.stream.initpos: AT_TIMESTAMP\n" if "initpos" in key else ""
    if key in ("aws.credentials.provider.role.externalId",
               "aws.credentials.provider.role.sessionName"):
        extra = "    aws.credentials.provider.role.arn: arn:aws:iam::123456789012:role/r\n"
    text = ("mode: incremental\nkinesis:\n  stream: s\n  flink_properties:\n"
            f"    {key}: \"{value}\"\n{extra}output: {{path: /x}}\n")
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        parse(text)
    assert str(info.value).startswith("k.yaml:4: kinesis.flink_properties: ")
    for native in ("kinesis.polling", "endpoint_url", "is not a duration", "kinesis.efo"):
        assert native not in str(info.value)


@pytest.mark.parametrize("key, value, message", [
    ("region", "eu west 1", "kinesis.region: 'eu west 1' is not an AWS region name"),
    ("endpoint_url", "localhost:4567", "kinesis.endpoint_url: 'localhost:4567' is not an "
                                       "endpoint URL"),
])
def test_native_aws_keys_are_checked_too(key, value, message):
    text = (f"mode: incremental\nkinesis:\n  stream: s\n  {key}: \"{value}\"\n"
            "output: {path: /x}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse(text)


# Flink's Kinesis consumer defaults (ConsumerConfigConstants.DEFAULT_*), which the sources
# page's (docs/kinesis.md) "Flink's" default stands for: (retries, backoff base ms, backoff max
# ms, exponent).
FLINK_DEFAULTS = {
    "get_records": (3, 300, 1000, 1.5),  # flink.shard.getrecords.*
    "get_shard_iterator": (3, 300, 1000, 1.5),  # flink.shard.getiterator.*
    "list_shards": (10, 1000, 5000, 1.5),  # flink.list.shards.*
    "subscribe_to_shard": (10, 1000, 2000, 1.5),  # flink.shard.subscribetoshard.*
    "register_stream_consumer": (10, 500, 2000, 1.5),  # flink.stream.registerstreamconsumer.*
    "deregister_stream_consumer": (10, 500, 2000, 1.5),
    "describe_stream_consumer": (50, 2000, 5000, 1.5),
}


def test_defaults_are_the_readmes_and_flinks():
    from streamslice.kinesis.positions import Tip, TrimHorizon
    src = parse("mode: incremental\nkinesis: {stream: taxi}\noutput: {path: /lake}\n").source
    assert (src.start, src.stop, src.reader, src.on_data_loss) == \
        (TrimHorizon(), Tip(), "polling", "fail")
    assert (src.efo_registration, src.efo_consumer_name, src.efo_sweep_after_ms) == \
        ("per_run", "streamslice-k", 3_600_000)
    # DEFAULT_SHARD_GETRECORDS_MAX, DEFAULT_SHARD_GETRECORDS_INTERVAL_MILLIS
    assert (src.polling.max_records, src.polling.interval_ms) == (10_000, 200)
    assert {api: (b.max_retries, b.base_ms, b.max_ms, b.exponent)
            for api, b in src.polling.backoff.items()} == FLINK_DEFAULTS
    # "yyyy-MM-dd'T'HH:mm:ss.SSSXXX" (DEFAULT_STREAM_TIMESTAMP_DATE_FORMAT) reads a date
    start = parse(NATIVE.replace("  reader: efo\n", "")).source.start
    assert start == AtTimestamp(1459799926480)


def test_a_flink_config_without_initpos_starts_at_latest_as_flink_does():
    """Flink's DEFAULT_STREAM_INITIAL_POSITION is LATEST; the native block's start is
    TRIM_HORIZON. A ported Flink config must not read the stream's whole retention."""
    from streamslice.kinesis.positions import Latest, TrimHorizon
    text = "mode: incremental\nkinesis:\n  stream: taxi\n  flink_properties: {aws.region: r}\n" \
        "output: {path: /lake}\n"
    assert parse(text).source.start == Latest()
    assert parse(text.replace("aws.region: r", "aws.region: r, flink.stream.initpos: "
                              "TRIM_HORIZON")).source.start == TrimHorizon()
    # the interval sets the start in mode interval, with or without Flink keys
    interval = "mode: interval\nschedule: 10m\nstart_date: 2024-05-01T00:00:00Z\n" + \
        text.removeprefix("mode: incremental\n")
    assert parse(interval).source.start == AtTimestamp("data_interval_start")
