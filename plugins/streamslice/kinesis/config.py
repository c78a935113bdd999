"""The ``kinesis:`` block of a pipeline file (native names, or a Flink consumer-config map)."""
from dataclasses import dataclass, field

from ..fields import Fields
from ..yamlfile import LineDict, line_of
from ..timeutil import (DEFAULT_JAVA_DATE_FORMAT, INTERVAL_END, INTERVAL_START,
                        parse_date_string_ms, parse_duration_ms, parse_epoch_seconds_ms)
from .client import DEFAULT_BACKOFF, Backoff
from .polling import PollingSettings

POSITIONS = ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP", "AT_SEQUENCE_NUMBER",
             "AFTER_SEQUENCE_NUMBER")
REGISTRATIONS = ("per_run", "keep", "none")


@dataclass(frozen=True)
class KinesisSource:
    streams: tuple  # names or ARNs
    start: dict  # {"type": …, "timestamp": ms | symbol, "seq": {shard: seq}}
    stop: dict  # {"type": "latest" | "shard_end" | "timestamp", "timestamp": ms | symbol}
    region: str = None
    endpoint_url: str = None
    conn_id: str = None
    credentials: dict = field(default_factory=dict)
    reader: str = "polling"  # or "efo"
    efo_registration: str = "per_run"
    efo_consumer_name: str = None
    efo_consumer_arns: dict = field(default_factory=dict)  # stream → ARN (registration none)
    efo_sweep_after_ms: int = 3_600_000
    polling: PollingSettings = field(default_factory=PollingSettings)
    on_data_loss: str = "fail"
    kind = "kinesis"

    def describe(self):
        return ", ".join(self.streams) + (" (EFO)" if self.reader == "efo" else "")

    def describe_bounds(self, mode):
        if mode == "interval":
            return ("AT_TIMESTAMP `data_interval_start` → first record arriving at or after "
                    "`data_interval_end`")
        return f"{self.start['type']} (new shards) / checkpoint → {self.stop['type']}"

    def client_properties(self, resolved=None):
        props = dict(resolved or {})
        for key, value in (("region", self.region), ("endpoint_url", self.endpoint_url)):
            if value:
                props[key] = value
        props.update(self.credentials)
        return props


def parse_kinesis(f, mode, pipeline_name):
    flink = f.raw("flink_properties", None)
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
    date_format = f.str("timestamp_format", DEFAULT_JAVA_DATE_FORMAT)
    if mode == "interval":
        for key in ("start", "stop"):
            if f.has(key):
                raise f.error("is set by the run's data interval in mode interval; remove it",
                              key)
        start = {"type": "AT_TIMESTAMP", "timestamp": INTERVAL_START}
        stop = {"type": "timestamp", "timestamp": INTERVAL_END}
    else:
        start = f.parse("start", lambda v: parse_start(v, date_format), {"type": "TRIM_HORIZON"})
        stop = f.parse("stop", lambda v: parse_stop(v, date_format), {"type": "latest"})
    reader = f.str("reader", "polling", choices=("polling", "efo"))
    efo = f.child("efo")
    registration = efo.str("registration", "per_run", choices=REGISTRATIONS)
    arns = efo.raw("consumer_arn", {}) or {}
    if isinstance(arns, str):
        if len(streams) != 1:
            raise efo.error("give a map of stream → consumer ARN for several streams",
                            "consumer_arn")
        arns = {streams[0]: arns}
    if reader == "efo" and registration == "none":
        missing = [s for s in streams if s not in arns]
        if missing:
            raise efo.error(f"registration none needs a consumer ARN for stream {missing[0]!r}",
                            "consumer_arn")
    source = KinesisSource(
        streams=tuple(streams), start=start, stop=stop,
        region=f.str("region", None), endpoint_url=f.str("endpoint_url", None),
        conn_id=f.str("conn_id", None), credentials=_credentials(f),
        reader=reader, efo_registration=registration,
        efo_consumer_name=efo.str("consumer_name", f"streamslice-{pipeline_name}"),
        efo_consumer_arns=dict(arns),
        efo_sweep_after_ms=efo.parse("sweep_older_than", parse_duration_ms, 3_600_000),
        polling=_polling(f.child("polling"), f.child("retries")),
        on_data_loss=f.str("on_data_loss", "fail", choices=("fail", "skip")))
    efo.done()
    f.done()
    return source


def parse_start(value, date_format=DEFAULT_JAVA_DATE_FORMAT):
    if isinstance(value, str):
        if value in ("TRIM_HORIZON", "LATEST"):
            return {"type": value}
        raise ValueError(f"{value!r} is not one of: {', '.join(POSITIONS)}")
    if isinstance(value, dict) and len(value) == 1:
        (kind, arg), = value.items()
        if kind == "AT_TIMESTAMP":
            return {"type": kind, "timestamp": parse_kinesis_time(arg, date_format)}
        if kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
            if not isinstance(arg, dict) or not arg:
                raise ValueError(f"{kind} maps shard ids to sequence numbers")
            return {"type": kind, "seq": {str(k): str(v) for k, v in arg.items()}}
    raise ValueError(f"{value!r} is not a start position; use one of {', '.join(POSITIONS)} "
                     "(AT_TIMESTAMP as {AT_TIMESTAMP: 1459799926.480})")


def parse_stop(value, date_format=DEFAULT_JAVA_DATE_FORMAT):
    if value in ("latest", "shard_end"):
        return {"type": value}
    if isinstance(value, dict) and list(value) == ["timestamp"]:
        return {"type": "timestamp", "timestamp": parse_kinesis_time(value["timestamp"],
                                                                     date_format)}
    raise ValueError(f"{value!r} is not a stop: latest, shard_end or {{timestamp: …}}")


def parse_kinesis_time(value, date_format=DEFAULT_JAVA_DATE_FORMAT):
    """Flink's forms: epoch seconds with a fraction, or a date string in ``date_format``."""
    if value in (INTERVAL_START, INTERVAL_END):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_epoch_seconds_ms(value)
    text = str(value).strip()
    try:
        return parse_epoch_seconds_ms(text)
    except ValueError:
        return parse_date_string_ms(text, date_format)


def _credentials(f):
    creds = f.child("credentials")
    out = {}
    if creds.has("access_key_id"):
        out = {"access_key_id": creds.str("access_key_id"),
               "secret_access_key": creds.str("secret_access_key")}
    creds.done()
    return out


def _polling(p, r):
    backoff = dict(DEFAULT_BACKOFF)
    for api in list(r.mapping):
        if api not in DEFAULT_BACKOFF:
            raise r.error(f"unknown API {api!r} (allowed: {', '.join(DEFAULT_BACKOFF)})", api)
        b = r.child(api)
        d = DEFAULT_BACKOFF[api]
        backoff[api] = Backoff(max_retries=b.int("max_retries", d.max_retries, minimum=0),
                               base_ms=b.parse("backoff_base", parse_duration_ms, d.base_ms),
                               max_ms=b.parse("backoff_max", parse_duration_ms, d.max_ms),
                               exponent=float(b.raw("backoff_exponent", d.exponent)))
        b.done()
    settings = PollingSettings(max_records=p.int("max_records", 10_000, minimum=1),
                               interval_ms=p.parse("interval", parse_duration_ms, 200),
                               backoff=backoff)
    if settings.max_records > 10_000:
        raise p.error("must be at most 10000 (the GetRecords limit)", "max_records")
    p.done()
    return settings

