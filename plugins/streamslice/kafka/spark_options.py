"""Spark's Kafka batch options → a KafkaSource, with Spark 4's semantics, defaults and error
texts (``KafkaSourceProvider``); no PySpark imports.

Precedence per side, as Spark's ``getKafkaOffsetRangeLimit``: ``startingTimestamp`` over
``startingOffsetsByTimestamp`` over ``startingOffsets`` (default ``earliest``); the same for
ending (default ``latest``). Offsets JSON uses -2 for earliest and -1 for latest.

Checked in Spark's order, before any broker is asked anything (``validateBatchOptions``, then
``checkOffsetLimitValidity``): the starting side, the ending side, the subscription, the
partition options, the client properties (refusals, then ``kafka.bootstrap.servers``), then
the two sides against each other. So a user meets the error Spark would show first.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..config.data_source_options import boolean, client_properties, positive
from ..errors import ConfigError

if TYPE_CHECKING:
    from .subscriber import Subscriber

EARLIEST, LATEST = -2, -1

# Spark's Kafka source options (lower-case), and those that only apply to streaming queries,
# which Spark ignores in batch with a warning.
OPTIONS = ("subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
           "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
           "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "failOnDataLoss",
           "minPartitions", "maxRecordsPerPartition", "includeHeaders", "groupIdPrefix",
           "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries",
           "fetchOffset.retryIntervalMs", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
           "maxTriggerDelay", "client")
STRATEGIES = ("assign", "subscribe", "subscribepattern")

# Java consumer property → librdkafka property, where the names differ.
JAVA_TO_LIBRDKAFKA = {"receive.buffer.bytes": "socket.receive.buffer.bytes",
                      "send.buffer.bytes": "socket.send.buffer.bytes",
                      "sasl.mechanism": "sasl.mechanisms",
                      "max.poll.records": None, "max.poll.interval.ms": None,
                      "request.timeout.ms": None, "default.api.timeout.ms": None,
                      "key.serializer": None, "value.serializer": None}
REFUSED = {
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the "
                         "source option 'startingOffsets' to 'earliest' or 'latest' to specify "
                         "where to start.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are "
                        "deserialized as byte arrays with ByteArrayDeserializer. Use DataFrame "
                        "operations to explicitly deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are "
                          "deserialized as byte arrays with ByteArrayDeserializer. Use "
                          "DataFrame operations to explicitly deserialize the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
    "ssl.truststore.location": "Kafka option 'ssl.truststore.location' (a Java keystore) is "
                               "not supported: give the CA certificate as PEM in "
                               "kafka.ssl.ca.location",
}
_JAAS = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


class StreamOnlyError(ConfigError):
    """A start a streaming query takes and a batch read refuses (``latest``): the data
    source's schema, asked for both alike, is the stream's then (``spark.datasource``)."""

    stream_only = True


@dataclass(frozen=True)
class Side:
    """One end of the range as the options give it (Spark's OffsetRangeLimit)."""

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    offsets: dict[str, int] = field(default_factory=dict)  # "topic:p" → offset, -2/-1
    timestamp: int | None = None
    option: str = ""  # the option it came from, for errors

    def for_partition(self, key: str) -> dict[str, int]:
        """The late-bound spec of one partition: {"offset": n} or {"timestamp": ms}."""
        if self.kind == "earliest":
            return {"offset": EARLIEST}
        if self.kind == "latest":
            return {"offset": LATEST}
        if self.kind == "timestamp":
            assert self.timestamp is not None
            return {"timestamp": self.timestamp}
        value = self.offsets[key]
        return {"timestamp": value} if self.kind == "timestamps" else {"offset": value}


@dataclass(frozen=True)
class SparkRead:
    """The batch options that shape a read beyond its start and stop."""

    start: Side
    stop: Side
    no_match: Literal["error", "latest"] = "error"  # startingOffsetsByTimestampStrategy
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False


@dataclass(frozen=True)
class SparkSource:
    """What a Spark read's options say of the KafkaSource (``KafkaSource.from_options``)."""

    subscriber: Subscriber
    bootstrap_servers: str
    properties: dict[str, Any]
    client: Literal["confluent-kafka", "kafka-python"]
    on_data_loss: Literal["fail", "skip"]
    spark: SparkRead


def kafka_from_options(opts: dict[str, str]) -> tuple[SparkSource, dict[str, Any]]:
    """``opts`` has lower-cased keys. Returns what the KafkaSource is built from and the client
    properties, checked in Spark's order (the module's docstring)."""
    no_match = choice(opts, "startingOffsetsByTimestampStrategy", ("error", "latest"), "error")
    start = side(opts, "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets",
                 "earliest")
    check_start(start)
    stop = side(opts, "endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets", "latest")
    check_stop(stop)
    subscription = subscriber(opts)
    min_partitions = positive(opts, "minPartitions")
    max_records = positive(opts, "maxRecordsPerPartition")
    props = kafka_properties(opts)
    check_limits(start, stop)
    read = SparkRead(
        start=start, stop=stop, no_match=no_match,  # type: ignore[arg-type]
        fail_on_data_loss=boolean(opts, "failOnDataLoss", True),
        min_partitions=min_partitions, max_records_per_partition=max_records,
        include_headers=boolean(opts, "includeHeaders", False))
    source = SparkSource(
        subscriber=subscription, bootstrap_servers=props["bootstrap.servers"],
        properties={k: v for k, v in props.items() if k != "bootstrap.servers"},
        client=choice(opts, "client", ("confluent-kafka", "kafka-python"),  # type: ignore[arg-type]
                      "confluent-kafka"),
        on_data_loss="fail" if read.fail_on_data_loss else "skip", spark=read)
    return source, props


def subscriber(opts: dict[str, str]) -> Any:
    from .subscriber import PartitionSet, TopicList, TopicPattern, parse_partition
    given = [k for k in STRATEGIES if k in opts]
    if len(given) != 1:
        which = "One of" if not given else "Only one of"
        verb = "must" if not given else "can"
        raise ConfigError(f"{which} the following options {verb} be specified for Kafka "
                          "source: assign, subscribe, subscribePattern. See the docs for more "
                          "details.")
    value = opts[given[0]]
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError("No topics to subscribe to as specified value for option "
                              f"'subscribe' is '{value}'")
        return TopicList(topics)
    if given[0] == "subscribepattern":
        if not value.strip():
            raise ConfigError("Pattern to subscribe is empty as specified value for option "
                              f"'subscribePattern' is '{value}'")
        try:
            re.compile(value.strip())
        except re.error as exc:
            raise ConfigError(f"option subscribePattern: {value!r} is not a valid regex: "
                              f"{exc}") from None
        return TopicPattern(value.strip(), search=True)  # Spark: Pattern.matcher().find()
    if not value.strip().startswith("{"):
        raise ConfigError("No topicpartitions to assign as specified value for option "
                          f"'assign' is '{value}'")
    assigned = json_map(value, "assign")
    parts = []
    for topic, partitions in assigned.items():
        if not isinstance(partitions, list) or not all(_is_int(p) for p in partitions):
            raise ConfigError(f"option assign: {topic!r} must map to a list of partition "
                              'numbers, e.g. {"topicA": [0, 1]}')
        parts += [parse_partition(f"{topic}:{p}") for p in partitions]
    return PartitionSet(tuple(parts))


def side(opts: dict[str, str], ts_name: str, by_ts_name: str, offsets_name: str,
         default: str) -> Side:
    ts, by_ts, offsets = (opts.get(n.lower()) for n in (ts_name, by_ts_name, offsets_name))
    if ts is not None:
        return Side("timestamp", timestamp=epoch_ms(ts, ts_name), option=ts_name)
    if by_ts is not None:
        return Side("timestamps", offsets=partition_map(by_ts, by_ts_name, timestamps=True),
                    option=by_ts_name)
    text = (offsets if offsets is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        return Side(text.lower(), option=offsets_name)  # type: ignore[arg-type]
    return Side("offsets", offsets=partition_map(text, offsets_name), option=offsets_name)


def check_start(start: Side) -> None:
    """Spark's ``validateBatchOptions``, starting side."""
    if start.kind == "latest":
        raise StreamOnlyError("starting offset can't be latest for batch queries on Kafka")
    for key, off in start.offsets.items():
        if start.kind == "offsets" and off == LATEST:
            raise StreamOnlyError(f"startingOffsets for {spark_tp(key)} can't be latest for "
                                  "batch queries on Kafka")


def check_stop(stop: Side) -> None:
    """Spark's ``validateBatchOptions``, ending side."""
    if stop.kind == "earliest":
        raise ConfigError("ending offset can't be earliest for batch queries on Kafka")
    for key, off in stop.offsets.items():
        if stop.kind == "offsets" and off == EARLIEST:
            raise ConfigError(f"ending offset for {spark_tp(key)} can't be earliest for batch "
                              "queries on Kafka")


def check_limits(start: Side, stop: Side) -> None:
    """Spark's ``checkOffsetLimitValidity``: two sides given per partition, both as offsets
    or both as timestamps, name the same partitions, and no start is after its end (-2 and
    -1 are not compared), before anything is resolved."""
    if start.kind != stop.kind or start.kind not in ("offsets", "timestamps"):
        return
    if set(start.offsets) != set(stop.offsets):
        raise ConfigError(
            "The specified start offset and end offset should have the same topic-partitions. "
            f"Topic-partitions for start offset: {_tp_set(start.offsets)}, topic-partitions "
            f"for end offset: {_tp_set(stop.offsets)}.")
    what = "offset" if start.kind == "offsets" else "timestamp"
    for key, first in sorted(start.offsets.items()):
        last = stop.offsets[key]
        if first > last and first >= 0 and last >= 0:
            topic, _, part = key.rpartition(":")
            raise ConfigError(f"The specified start {what} {first} is greater than the end "
                              f"{what} {last} for topic {topic} partition {part}.")


def _tp_set(offsets: dict[str, int]) -> str:
    """A set of topic-partitions as Scala prints it: ``Set(t-0, t-1)``."""
    return f"Set({', '.join(sorted(spark_tp(k) for k in offsets))})"


def kafka_properties(opts: dict[str, str]) -> dict[str, str]:
    """``kafka.*`` options as librdkafka properties, ``isolation.level`` read_uncommitted
    unless given (Spark's default); Spark's refusals with Spark's reasons."""
    raw = client_properties(opts, "kafka.")
    out: dict[str, str] = {}
    for name, value in raw.items():
        name = name.lower()
        if name in REFUSED:
            raise ConfigError(REFUSED[name])
        if name == "sasl.jaas.config":  # Java's PLAIN/SCRAM login module → librdkafka's
            creds = dict(_JAAS.findall(value))
            if "username" not in creds or "password" not in creds:
                raise ConfigError("option kafka.sasl.jaas.config: give username=\"…\" "
                                  "password=\"…\" (a PLAIN or SCRAM login module)")
            out["sasl.username"], out["sasl.password"] = creds["username"], creds["password"]
            continue
        target = JAVA_TO_LIBRDKAFKA.get(name, name)
        if target:
            out[target] = value
    if "bootstrap.servers" not in out:
        raise ConfigError("Option 'kafka.bootstrap.servers' must be specified for configuring "
                          "Kafka consumer")
    # Spark's consumers read what is not committed yet too, unless told otherwise (the Java
    # client's default); librdkafka's default is read_committed
    out.setdefault("isolation.level", "read_uncommitted")
    return out


def partition_map(text: str, option: str, timestamps: bool = False) -> dict[str, int]:
    """``{"topicA": {"0": 23, "1": -2}}`` → ``{"topicA:0": 23, "topicA:1": -2}``."""
    out = {}
    for topic, parts in json_map(text, option).items():
        if not isinstance(parts, dict):
            raise ConfigError(f'option {option}: {topic!r} must map partitions to '
                              f'{"timestamps" if timestamps else "offsets"}, e.g. '
                              '{"topicA": {"0": 23}}')
        for part, value in parts.items():
            if not str(part).isdigit() or not _is_int(value):
                raise ConfigError(f"option {option}: {topic}:{part} = {value!r}: partitions "
                                  "and values must be whole numbers")
            low = 0 if timestamps else EARLIEST
            if value < low:
                raise ConfigError(f"option {option}: {topic}:{part} = {value} is not allowed "
                                  f"(use {'epoch ms' if timestamps else '-2 earliest, -1 latest'})")
            out[f"{topic}:{int(part)}"] = int(value)
    return out


def json_map(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"option {option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"option {option} must be a non-empty JSON object")
    return value


def choice(opts: dict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.lower() not in allowed:
        raise ConfigError(f"option {name}: {value!r} is not one of: {', '.join(allowed)}")
    return value.lower()


def epoch_ms(value: str, name: str) -> int:
    try:
        ms = int(value.strip())
    except ValueError:
        raise ConfigError(f"option {name}: {value!r} is not a timestamp in epoch "
                          "milliseconds") from None
    if ms < 0:
        raise ConfigError(f"option {name}: {ms} is negative")
    return ms


def spark_tp(key: str) -> str:
    """Spark prints a TopicPartition as ``topic-0``."""
    topic, _, part = key.rpartition(":")
    return f"{topic}-{part}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
