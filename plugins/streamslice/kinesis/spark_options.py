"""Spark options for ``streamslice-kinesis`` → a KinesisSource: ``streamName``,
``startingPosition`` (TRIM_HORIZON | LATEST | AT_TIMESTAMP), ``startingTimestamp``,
``endingTimestamp``, ``region``, ``endpointUrl``, ``consumerArns`` (JSON stream → EFO consumer
ARN: read with SubscribeToShard) and ``aws.*`` client properties."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..config.data_source_options import client_properties, json_option
from ..errors import ConfigError
from .polling import PollingSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..sources import Properties
    from .positions import Position, Stop


@dataclass(frozen=True)
class SparkKinesis:
    """What a Spark read's or query's options say of the KinesisSource
    (``KinesisSource.from_options`` and ``.stream`` build it with these keywords)."""

    streams: tuple[str, ...]
    start: Position
    stop: Stop
    region: str | None
    endpoint_url: str | None
    reader: Literal["polling", "efo"]
    efo_registration: Literal["per_run", "keep", "none"]
    efo_consumer_arns: dict[str, str]
    efo_consumer_name: str | None = None
    polling: PollingSettings = field(default_factory=PollingSettings)
    on_data_loss: Literal["fail", "skip"] = "fail"


def kinesis_from_options(opts: dict[str, str]) -> tuple[SparkKinesis, Properties]:
    """``opts`` has lower-cased keys. Returns what the KinesisSource is built from and the
    client properties the options give (``aws.*``)."""
    from .config import parse_kinesis_time
    from .positions import ArrivedBefore, AtTimestamp, Latest, Tip, TrimHorizon
    if "streamname" not in opts:
        raise ConfigError("option streamName is required")
    kind = opts.get("startingposition", "TRIM_HORIZON").strip().upper()
    start: Position
    if kind == "AT_TIMESTAMP":
        if "startingtimestamp" not in opts:
            raise ConfigError("startingPosition AT_TIMESTAMP needs option startingTimestamp")
        start = AtTimestamp(_time(parse_kinesis_time, opts["startingtimestamp"]))
    elif "startingtimestamp" in opts and kind in ("TRIM_HORIZON", "LATEST"):
        raise ConfigError("option startingTimestamp is only used with startingPosition "
                          "AT_TIMESTAMP")
    elif kind in ("TRIM_HORIZON", "LATEST"):
        start = TrimHorizon() if kind == "TRIM_HORIZON" else Latest()
    else:
        raise ConfigError(f"option startingPosition: {kind!r} is not TRIM_HORIZON, LATEST or "
                          "AT_TIMESTAMP")
    stop: Stop = (ArrivedBefore(_time(parse_kinesis_time, opts["endingtimestamp"]))
                  if "endingtimestamp" in opts else Tip())
    if (isinstance(start, AtTimestamp) and isinstance(stop, ArrivedBefore)
            and stop.timestamp <= start.timestamp):  # type: ignore[operator]
        raise ConfigError("option endingTimestamp must be after startingTimestamp")
    streams = tuple(s.strip() for s in opts["streamname"].split(",") if s.strip())
    if not streams:
        raise ConfigError(f"option streamName: {opts['streamname']!r} names no stream")
    arns = consumer_arns(opts, streams)
    read = SparkKinesis(streams=streams, start=start, stop=stop, region=opts.get("region"),
                        endpoint_url=opts.get("endpointurl"),
                        reader="efo" if arns else "polling", efo_registration="none",
                        efo_consumer_arns=arns)
    return read, dict(client_properties(opts, "aws."))


def consumer_arns(opts: dict[str, str], streams: tuple[str, ...],
                  label: str = "consumerArns") -> dict[str, str]:
    """Option ``consumerArns``: a JSON object of streams of ``streamName`` to EFO consumer
    ARNs ({} when not given)."""
    given = json_option(opts, "consumerarns") if "consumerarns" in opts else {}
    unknown = sorted(set(given) - set(streams))
    arns = {k: v for k, v in given.items() if isinstance(v, str) and v.startswith("arn:")}
    if unknown or len(arns) != len(given):
        raise ConfigError(f"option {label} must map each stream of streamName to its EFO "
                          'consumer ARN, e.g. {"taxi": "arn:aws:kinesis:…"}'
                          + (f" ({unknown[0]!r} is not in streamName)" if unknown else ""))
    return arns


def _time(parse: Callable[[Any], int | str], value: Any) -> int | str:
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigError(f"option timestamp: {exc}") from None
