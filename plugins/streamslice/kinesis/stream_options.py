"""The options of a ``spark.readStream.format("streamslice-kinesis")`` query: the AWS Kinesis
connector for Spark's names (awslabs/spark-sql-kinesis-connector: ``kinesis.streamName``,
``kinesis.startingPosition``, ``kinesis.maxFetchRecordsPerShard`` …) with its defaults, each
also taken without its ``kinesis.`` prefix, as the batch read names them. No PySpark imports.

``STREAM_OPTIONS`` is the table docs/streaming.md lists (a docs test checks the two agree).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

from ..config.data_source_options import boolean, client_properties
from ..errors import ConfigError
from .polling import PollingSettings
from .spark_options import SparkKinesis, consumer_arns

if TYPE_CHECKING:
    from ..sources import Properties
    from .positions import Position, Stop

Registration = Literal["per_run", "keep", "none"]
PREFIX = "kinesis."
DEFAULT_MAX_FETCH = 100_000

# name → default, as docs/streaming.md lists them ("" for none)
STREAM_OPTIONS: dict[str, str] = {
    "streamName": "",
    "region": "",
    "endpointUrl": "",
    "consumerType": "GetRecords",
    "consumerName": "",
    "efoRegistration": "per_run",
    "consumerArns": "",
    "startingPosition": "LATEST",
    "startingTimestamp": "",
    "maxFetchRecordsPerShard": str(DEFAULT_MAX_FETCH),
    "failOnDataLoss": "false",
    "getRecords.numberOfRecordsPerFetch": "10000",
    "getRecords.fetchIntervalMs": "200",
    "awsAccessKeyId": "",
    "awsSecretKey": "",
}
NAMES = tuple(n for name in STREAM_OPTIONS for n in (name, PREFIX + name))


@dataclass(frozen=True)
class StreamSettings:
    """What a query's options say beyond the ``KinesisSource`` they make."""

    max_fetch: int  # maxFetchRecordsPerShard: Kinesis records per shard per micro-batch
    fail_on_data_loss: bool
    consumer_name: str | None  # SubscribeToShard with registration per_run or keep
    registration: Registration

    @property
    def max_offsets(self) -> int:  # what spark.stream.default_limit reads
        return self.max_fetch

    @property
    def min_offsets(self) -> None:
        return None


def unprefixed(opts: dict[str, str]) -> dict[str, str]:
    """``kinesis.streamname`` → ``streamname`` (keys are lower-cased); both given is an
    error."""
    out: dict[str, str] = {}
    for key, value in opts.items():
        name = key[len(PREFIX):] if key.startswith(PREFIX) else key
        if name in out:
            raise ConfigError(f"option {name} is given twice (with and without {PREFIX})")
        out[name] = value
    return out


def stream_from_options(given: dict[str, str]) -> tuple[SparkKinesis, Properties,
                                                       StreamSettings]:
    """``given`` has lower-cased keys. Returns what the KinesisSource is built from, the
    client properties and the query's settings."""
    opts = unprefixed(given)
    if not opts.get("streamname", "").strip():
        raise ConfigError("option kinesis.streamName is required")
    streams = tuple(s.strip() for s in opts["streamname"].split(",") if s.strip())
    consumer_type = _choice(opts, "consumerType", ("GetRecords", "SubscribeToShard"))
    registration: Registration = _choice(  # type: ignore[assignment]
        opts, "efoRegistration", ("per_run", "keep", "none"))
    arns = consumer_arns(opts, streams, "kinesis.consumerArns")
    name = opts.get("consumername", "").strip() or None
    if consumer_type == "GetRecords" and (name or arns):
        raise ConfigError("options kinesis.consumerName and kinesis.consumerArns are for "
                          "kinesis.consumerType SubscribeToShard")
    if consumer_type == "SubscribeToShard":
        _check_efo(registration, name, arns, streams)
    settings = StreamSettings(
        max_fetch=_positive(opts, "maxFetchRecordsPerShard", DEFAULT_MAX_FETCH),
        fail_on_data_loss=boolean(opts, "failOnDataLoss", False,
                                  label="kinesis.failOnDataLoss"),
        consumer_name=name if registration != "none" else None, registration=registration)
    polling = PollingSettings(
        max_records=min(10_000, _positive(opts, "getRecords.numberOfRecordsPerFetch", 10_000)),
        interval_ms=_positive(opts, "getRecords.fetchIntervalMs", 200))
    efo = consumer_type == "SubscribeToShard"
    read = SparkKinesis(streams=streams, start=starting_position(opts), stop=_tip(),
                        region=opts.get("region"), endpoint_url=opts.get("endpointurl"),
                        reader="efo" if efo else "polling",
                        efo_registration=registration if efo else "none",
                        efo_consumer_name=name, efo_consumer_arns=arns, polling=polling,
                        on_data_loss="fail" if settings.fail_on_data_loss else "skip")
    props: Properties = dict(client_properties(opts, "aws."))
    for option, prop in (("awsaccesskeyid", "access_key_id"),
                         ("awssecretkey", "secret_access_key")):
        if option in opts:
            props[prop] = opts[option]
    return read, props, settings


def starting_position(opts: dict[str, str]) -> Position:
    """``LATEST`` (the connector's default), ``TRIM_HORIZON`` (or ``EARLIEST``),
    ``AT_TIMESTAMP 2023-08-30T19:00:05Z`` as the connector writes it, or ``AT_TIMESTAMP``
    with ``startingTimestamp`` (epoch seconds or a date, as the batch read takes it)."""
    from .positions import AtTimestamp, Latest, TrimHorizon
    text = opts.get("startingposition", "LATEST").strip()
    kind, _, when = text.partition(" ")
    kind = kind.upper()
    if kind == "AT_TIMESTAMP":
        given = when.strip() or opts.get("startingtimestamp", "").strip()
        if not given:
            raise ConfigError("kinesis.startingPosition AT_TIMESTAMP needs a time: "
                              "'AT_TIMESTAMP 2023-08-30T19:00:05Z' or option startingTimestamp")
        return AtTimestamp(_time(given))
    if when or "startingtimestamp" in opts:
        raise ConfigError(f"option kinesis.startingPosition: {text!r} takes no time; "
                          "only AT_TIMESTAMP does")
    if kind in ("TRIM_HORIZON", "EARLIEST"):
        return TrimHorizon()
    if kind == "LATEST":
        return Latest()
    raise ConfigError(f"option kinesis.startingPosition: {text!r} is not LATEST, "
                      "TRIM_HORIZON, EARLIEST or AT_TIMESTAMP <time>")


def _time(text: str) -> int:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:  # a time without an offset is UTC
        return int((when if when.tzinfo else when.replace(tzinfo=timezone.utc))
                   .timestamp() * 1000)
    from .config import parse_kinesis_time
    try:
        ms = parse_kinesis_time(text)
    except ValueError as exc:
        raise ConfigError(f"option kinesis.startingPosition: AT_TIMESTAMP {text!r}: "
                          f"{exc}") from None
    if not isinstance(ms, int):
        raise ConfigError(f"option kinesis.startingPosition: AT_TIMESTAMP {text!r} is not a "
                          "time")
    return ms


def _check_efo(registration: str, name: str | None, arns: dict[str, str],
               streams: tuple[str, ...]) -> None:
    if registration == "none":
        if sorted(arns) != sorted(streams) or name:
            raise ConfigError("kinesis.efoRegistration none takes kinesis.consumerArns, each "
                              "stream of streamName to its consumer ARN, and no consumerName")
    elif not name:
        raise ConfigError("option kinesis.consumerName is required with kinesis.consumerType "
                          "SubscribeToShard")
    elif arns:
        raise ConfigError("option kinesis.consumerArns is only for kinesis.efoRegistration "
                          "none")


def _tip() -> Stop:
    from .positions import Tip
    return Tip()


def _choice(opts: dict[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = opts.get(name.lower(), STREAM_OPTIONS[name]).strip()
    for choice in choices:
        if value.lower() == choice.lower():
            return choice
    raise ConfigError(f"option kinesis.{name}: {value!r} is not {' or '.join(choices)}")


def _positive(opts: dict[str, str], name: str, default: int) -> int:
    text = opts.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"option kinesis.{name}: {text!r} is not a positive integer")
    return value
