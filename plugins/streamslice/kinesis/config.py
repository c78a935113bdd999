"""The ``kinesis:`` block of a pipeline file (native names, or a Flink consumer-config map)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from ..aws import parse_auth
from ..aws.auth import endpoint_url, region_name
from ..config.fields import Fields
from ..config.yamlfile import LineDict, line_of
from ..errors import ConfigError
from ..sources import ON_DATA_LOSS
from ..timestamps import (
    DEFAULT_JAVA_DATE_FORMAT,
    INTERVAL_END,
    INTERVAL_START,
    parse_date_string_ms,
    parse_duration_ms,
    parse_epoch_seconds_ms,
)
from .client import DEFAULT_BACKOFF, Backoff
from .polling import PollingSettings
from .positions import (
    ArrivedBefore,
    AtTimestamp,
    Latest,
    Position,
    SequenceNumbers,
    ShardEnd,
    Stop,
    Tip,
    TrimHorizon,
)

if TYPE_CHECKING:
    from .source import KinesisSource

POSITIONS = ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP", "AT_SEQUENCE_NUMBER",
             "AFTER_SEQUENCE_NUMBER")
Reader = Literal["polling", "efo"]
Registration = Literal["per_run", "keep", "none"]
READERS: tuple[Reader, ...] = ("polling", "efo")
REGISTRATIONS: tuple[Registration, ...] = ("per_run", "keep", "none")
CONSUMER_ARN = re.compile(r"arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d+:stream/[\w.-]+/"
                          r"consumer/[\w.-]+:\d+")
# Besides region and endpoint_url: how the process that calls Kinesis gets its identity.
AUTH_KEYS = ("profile", "role_arn", "external_id", "session_name", "session_duration",
             "sts_endpoint_url")


def parse_kinesis(f: Fields, mode: str, pipeline_name: str) -> KinesisSource:
    """``f`` is a Fields over the kinesis mapping."""
    flink = f.raw("flink_properties", None)
    try:
        return _parse_kinesis(f, mode, pipeline_name, flink)
    except ConfigError as exc:
        if not isinstance(flink, dict) or not exc.field:
            raise
        from .flink import flink_origin
        native = exc.field.removeprefix(f"{f.path}.")
        origin = flink_origin(native, [str(k) for k in flink])
        if origin is None:
            raise
        # Name the key the user wrote, not the native field it was translated to.
        raise ConfigError(f"{origin}: {exc.reason}", file=exc.file,
                          line=exc.line or line_of(f.mapping, "flink_properties"),
                          field=f"{f.path}.flink_properties") from None


def _parse_kinesis(f: Fields, mode: str, pipeline_name: str, flink: Any) -> KinesisSource:  # noqa: C901 - the kinesis section's keys, one check each
    from .source import KinesisSource
    if flink is not None:
        from .flink import flink_to_native
        try:
            native = flink_to_native(flink)
        except ValueError as exc:
            raise f.error(str(exc), "flink_properties") from None
        clash = sorted(set(native) & set(f.mapping))
        if clash:
            raise f.error(f"{clash[0]} is given both natively and in flink_properties", clash[0])
        line = line_of(f.mapping, "flink_properties")
        merged = LineDict({k: v for k, v in f.mapping.items() if k != "flink_properties"})
        merged.update(native)
        merged.line = f.line
        merged.key_lines = {**(getattr(f.mapping, "key_lines", None) or {}),
                            **{k: line for k in native}}
        f = Fields(merged, file=f.file, path=f.path, parent_line=f.line)
    streams = f.list("streams") if f.has("streams") else [f.str("stream")]
    for s in streams:
        if not isinstance(s, str) or not s.strip():
            raise f.error(f"{s!r} is not a stream name or ARN", "streams")
    date_format = f.parse("timestamp_format", _date_format, DEFAULT_JAVA_DATE_FORMAT)
    if mode == "interval":
        for key in ("start", "stop"):
            if f.has(key):
                raise f.error("is set by the run's data interval in mode interval; remove it",
                              key)
        start: Position = AtTimestamp(INTERVAL_START)
        stop: Stop = ArrivedBefore(INTERVAL_END)
    else:
        # A Flink consumer config without flink.stream.initpos starts where Flink's does
        # (ConsumerConfigConstants.DEFAULT_STREAM_INITIAL_POSITION: LATEST).
        default: Position = Latest() if flink is not None else TrimHorizon()
        start = f.parse("start", lambda v: parse_start(v, date_format), default)
        stop = f.parse("stop", lambda v: parse_stop(v, date_format), Tip())
        if isinstance(start, AtTimestamp) and isinstance(start.timestamp, str):
            raise f.error(f"AT_TIMESTAMP {start.timestamp} needs mode interval", "start")
        if isinstance(stop, ArrivedBefore) and isinstance(stop.timestamp, str):
            raise f.error(f"{stop.timestamp} needs mode interval", "stop")
    reader: Reader = f.str("reader", "polling", choices=READERS)
    efo = f.child("efo")
    registration: Registration = efo.str("registration", "per_run", choices=REGISTRATIONS)
    arns = efo.raw("consumer_arn", {}) or {}
    if isinstance(arns, str):
        if len(streams) != 1:
            raise efo.error("give a map of stream → consumer ARN for several streams",
                            "consumer_arn")
        arns = {streams[0]: arns}
    if not isinstance(arns, dict):
        raise efo.error("must be a consumer ARN, or a map of stream → consumer ARN",
                        "consumer_arn")
    for stream, arn in arns.items():
        if stream not in streams:
            raise efo.error(f"names stream {stream!r}, which the pipeline does not read "
                            f"({', '.join(streams)})", "consumer_arn")
        if not isinstance(arn, str) or not CONSUMER_ARN.fullmatch(arn):
            raise efo.error(f"{arn!r} is not a Kinesis stream consumer ARN (arn:aws:kinesis:"
                            "<region>:<account>:stream/<stream>/consumer/<name>:<time>)",
                            "consumer_arn")
    if reader == "efo" and registration == "none":
        missing = [s for s in streams if s not in arns]
        if missing:
            raise efo.error(f"registration none needs a consumer ARN for stream {missing[0]!r}",
                            "consumer_arn")
    source = KinesisSource(
        streams=tuple(streams), start=start, stop=stop,
        region=f.parse("region", region_name, None),
        endpoint_url=f.parse("endpoint_url", endpoint_url, None),
        conn_id=f.str("conn_id", None), credentials=_credentials(f),
        aws=parse_auth(f, keys=AUTH_KEYS),
        reader=reader, efo_registration=registration,
        efo_consumer_name=_consumer_name(efo, pipeline_name),
        efo_consumer_arns=dict(arns),
        efo_sweep_after_ms=efo.parse("sweep_older_than", parse_duration_ms, 3_600_000),
        polling=_polling(f.child("polling"), f.child("retries")),
        on_data_loss=f.str("on_data_loss", "fail", choices=ON_DATA_LOSS))
    efo.done()
    f.done()
    return source


def parse_start(value: Any, date_format: str = DEFAULT_JAVA_DATE_FORMAT) -> Position:
    if isinstance(value, str):
        if value == "TRIM_HORIZON":
            return TrimHorizon()
        if value == "LATEST":
            return Latest()
        raise ValueError(f"{value!r} is not one of: {', '.join(POSITIONS)}")
    if isinstance(value, dict) and len(value) == 1:
        (kind, arg), = value.items()
        if kind == "AT_TIMESTAMP":
            return AtTimestamp(parse_kinesis_time(arg, date_format))
        if kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
            if not isinstance(arg, dict) or not arg:
                raise ValueError(f"{kind} maps shard ids to sequence numbers")
            return SequenceNumbers(kind, {str(k): str(v) for k, v in arg.items()})
    raise ValueError(f"{value!r} is not a start position; use one of {', '.join(POSITIONS)} "
                     "(AT_TIMESTAMP as {AT_TIMESTAMP: 1459799926.480})")


def parse_stop(value: Any, date_format: str = DEFAULT_JAVA_DATE_FORMAT) -> Stop:
    if value == "latest":
        return Tip()
    if value == "shard_end":
        return ShardEnd()
    if isinstance(value, dict) and list(value) == ["timestamp"]:
        return ArrivedBefore(parse_kinesis_time(value["timestamp"], date_format))
    raise ValueError(f"{value!r} is not a stop: latest, shard_end or {{timestamp: …}}")


def parse_kinesis_time(value: Any, date_format: str = DEFAULT_JAVA_DATE_FORMAT) -> int | str:
    """Flink's forms: epoch seconds with a fraction, or a date string in ``date_format``."""
    if value in (INTERVAL_START, INTERVAL_END):
        return str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_epoch_seconds_ms(value)
    text = str(value).strip()
    try:
        return parse_epoch_seconds_ms(text)
    except ValueError:
        return parse_date_string_ms(text, date_format)


def _credentials(f: Fields) -> dict[str, str]:
    creds = f.child("credentials")
    out: dict[str, str] = {}
    if creds.has("access_key_id"):
        out = {"access_key_id": creds.str("access_key_id"),
               "secret_access_key": creds.str("secret_access_key")}
    creds.done()
    return out


def _polling(p: Fields, r: Fields) -> PollingSettings:
    backoff = dict(DEFAULT_BACKOFF)
    for api in list(r.mapping):
        if api not in DEFAULT_BACKOFF:
            raise r.error(f"unknown API {api!r} (allowed: {', '.join(DEFAULT_BACKOFF)})", api)
        b = r.child(api)
        d = DEFAULT_BACKOFF[api]
        backoff[api] = Backoff(max_retries=b.int("max_retries", d.max_retries, minimum=0),
                               base_ms=b.parse("backoff_base", parse_duration_ms, d.base_ms),
                               max_ms=b.parse("backoff_max", parse_duration_ms, d.max_ms),
                               exponent=b.parse("backoff_exponent", _exponent, d.exponent))
        b.done()
    settings = PollingSettings(max_records=p.int("max_records", 10_000, minimum=1),
                               interval_ms=p.parse("interval", parse_duration_ms, 200),
                               backoff=backoff)
    if settings.max_records > 10_000:
        raise p.error("must be at most 10000 (the GetRecords limit)", "max_records")
    p.done()
    return settings



def _consumer_name(efo: Fields, pipeline_name: str) -> str:
    """Kinesis allows 128 characters; per-run consumers add an 11-character run suffix."""
    name = efo.str("consumer_name", f"streamslice-{pipeline_name}")
    if not re.fullmatch(r"[a-zA-Z0-9_.-]+", name):
        raise efo.error(f"{name!r} may hold only letters, digits, '_', '.' and '-'",
                        "consumer_name")
    if len(name) > 117:
        raise efo.error(f"is {len(name)} characters; at most 117 (Kinesis allows 128, and "
                        "per-run consumers add an 11-character suffix)", "consumer_name")
    return name


def _date_format(value: Any) -> str:
    """A Java date format this reader can parse, checked even where no date uses it yet."""
    from ..timestamps.javadate import compile_pattern
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a Java date format (e.g. {DEFAULT_JAVA_DATE_FORMAT}), got "
                         f"{value!r}")
    compile_pattern(value)
    return value


def _exponent(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number (e.g. 1.5)") from None
    if not 1 <= number <= 10:
        raise ValueError(f"{number} is outside 1..10")
    return number
