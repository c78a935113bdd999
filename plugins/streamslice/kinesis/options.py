"""Spark options for ``streamslice-kinesis`` → a KinesisSource: ``streamName``,
``startingPosition`` (TRIM_HORIZON | LATEST | AT_TIMESTAMP), ``startingTimestamp``,
``endingTimestamp``, ``region``, ``endpointUrl`` and ``aws.*`` client properties."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config.options import client_properties
from ..errors import ConfigError

if TYPE_CHECKING:
    from .source import KinesisSource


def kinesis_from_options(opts: dict[str, str]) -> tuple[KinesisSource, dict[str, Any]]:
    from .config import parse_kinesis_time
    from .positions import ArrivedBefore, AtTimestamp, Latest, Position, Stop, Tip, TrimHorizon
    from .source import KinesisSource
    if "streamname" not in opts:
        raise ConfigError("option streamName is required")
    kind = opts.get("startingposition", "TRIM_HORIZON").upper()
    start: Position
    if kind == "AT_TIMESTAMP":
        if "startingtimestamp" not in opts:
            raise ConfigError("startingPosition AT_TIMESTAMP needs option startingTimestamp")
        start = AtTimestamp(_time(parse_kinesis_time, opts["startingtimestamp"]))
    elif kind in ("TRIM_HORIZON", "LATEST"):
        start = TrimHorizon() if kind == "TRIM_HORIZON" else Latest()
    else:
        raise ConfigError(f"option startingPosition: {kind!r} is not TRIM_HORIZON, LATEST or "
                          "AT_TIMESTAMP")
    stop: Stop = (ArrivedBefore(_time(parse_kinesis_time, opts["endingtimestamp"]))
                  if "endingtimestamp" in opts else Tip())
    source = KinesisSource(streams=tuple(s.strip() for s in opts["streamname"].split(",")),
                           start=start, stop=stop, region=opts.get("region"),
                           endpoint_url=opts.get("endpointurl"))
    return source, source.client_properties(client_properties(opts, "aws."))


def _time(parse, value):
    try:
        return parse(value)
    except ValueError as exc:
        raise ConfigError(f"option timestamp: {exc}") from None
