"""Standalone Spark options for ``streamslice-kinesis`` → a bounded ReadPlan."""
import time

from ..errors import ConfigError


def kinesis_plan_from_options(opts):
    from ..config import Decoding
    from ..planning import plan_run
    from .config import KinesisSource, parse_kinesis_time
    from .split import at_timestamp
    if "streamname" not in opts:
        raise ConfigError("option streamName is required")
    start = opts.get("startingposition", "TRIM_HORIZON").upper()
    if start == "AT_TIMESTAMP":
        if "startingtimestamp" not in opts:
            raise ConfigError("startingPosition AT_TIMESTAMP needs option startingTimestamp")
        start_spec = at_timestamp(parse_kinesis_time(opts["startingtimestamp"]))
    elif start in ("TRIM_HORIZON", "LATEST"):
        start_spec = {"type": start}
    else:
        raise ConfigError(f"option startingPosition: {start!r} is not TRIM_HORIZON, LATEST or "
                          "AT_TIMESTAMP")
    stop = ({"type": "timestamp", "timestamp": parse_kinesis_time(opts["endingtimestamp"])}
            if "endingtimestamp" in opts else {"type": "latest"})
    source = KinesisSource(streams=tuple(s.strip() for s in opts["streamname"].split(",")),
                           start=start_spec, stop=stop, region=opts.get("region"),
                           endpoint_url=opts.get("endpointurl"))
    props = {k[4:]: v for k, v in opts.items() if k.startswith("aws.")}
    return plan_run(source, pipeline=opts.get("pipeline", "adhoc"), mode="bounded",
                    decode=Decoding(value=opts.get("valueformat", "raw")),
                    properties=source.client_properties(props), now_ms=int(time.time() * 1000))
