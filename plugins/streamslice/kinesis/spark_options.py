"""Spark options for ``streamslice-kinesis`` → a KinesisSource: ``streamName``,
``startingPosition`` (TRIM_HORIZON | LATEST | AT_TIMESTAMP), ``startingTimestamp``,
``endingTimestamp``, ``region``, ``endpointUrl``, ``consumerArns`` (JSON stream → EFO consumer
ARN: read with SubscribeToShard) and ``aws.*`` client properties."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config.data_source_options import client_properties, json_option
from ..errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable


def kinesis_from_options(opts: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``opts`` has lower-cased keys. Returns the KinesisSource's fields and the client
    properties the options give (``aws.*``)."""
    from .config import parse_kinesis_time
    from .positions import ArrivedBefore, AtTimestamp, Latest, Position, Stop, Tip, TrimHorizon
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
    arns = json_option(opts, "consumerarns") if "consumerarns" in opts else {}
    unknown = sorted(set(arns) - set(streams))
    if unknown or not all(isinstance(a, str) and a.startswith("arn:") for a in arns.values()):
        raise ConfigError("option consumerArns must map each stream of streamName to its EFO "
                          'consumer ARN, e.g. {"taxi": "arn:aws:kinesis:…"}'
                          + (f" ({unknown[0]!r} is not in streamName)" if unknown else ""))
    fields = dict(streams=streams, start=start, stop=stop, region=opts.get("region"),
                  endpoint_url=opts.get("endpointurl"), reader="efo" if arns else "polling",
                  efo_registration="none", efo_consumer_arns=arns)
    return fields, client_properties(opts, "aws.")


def _time(parse: Callable[[Any], int | str], value: Any) -> int | str:
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigError(f"option timestamp: {exc}") from None
