"""Flink Kinesis consumer properties (ConsumerConfigConstants) → the native ``kinesis:`` keys.

What we support maps one to one; anything else is rejected with its key named, so a user
porting a Flink job learns exactly what does not carry over."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..records import JsonObject, JsonValue

_INITPOS = {"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"}
_REGISTRATION = {"LAZY": "per_run", "EAGER": "keep", "NONE": "none"}
_PUBLISHER = {"POLLING": "polling", "EFO": "efo"}
_RETRY_APIS = {"flink.shard.getrecords": "get_records",
               "flink.shard.getiterator": "get_shard_iterator",
               "flink.shard.subscribetoshard": "subscribe_to_shard",
               "flink.stream.registerstreamconsumer": "register_stream_consumer",
               "flink.stream.deregisterstreamconsumer": "deregister_stream_consumer",
               "flink.stream.describestreamconsumer": "describe_stream_consumer",
               "flink.list.shards": "list_shards"}
_RETRY_FIELDS = {"maxretries": "max_retries", "retries": "max_retries",
                 "backoff.base": "backoff_base", "backoff.max": "backoff_max",
                 "backoff.expconst": "backoff_exponent"}
# AWSConfigConstants of the ASSUME_ROLE and PROFILE providers (the role's own base provider is
# the process's default chain).
_AUTH = {"aws.credentials.provider.role.arn": "role_arn",
         "aws.credentials.provider.role.sessionName": "session_name",
         "aws.credentials.provider.role.externalId": "external_id",
         "aws.credentials.provider.profile.name": "profile"}
_NOT_FOR_BOUNDED = {
    "flink.shard.discovery.intervalmillis": "shards are listed once per plan",
    "flink.shard.adaptivereads": "a bounded read takes max_records per call",
    "flink.shard.idle.interval": "bounded reads end at the tip; there are no idle shards",
    "flink.watermark.sync.interval": "runs are bounded; watermarks are not used",
    "flink.watermark.lookahead.millis": "runs are bounded; watermarks are not used",
}


def flink_to_native(props: object) -> JsonObject:  # noqa: C901 - a table of Flink's property keys, one branch each
    """The native ``kinesis:`` keys (as the YAML writes them) of Flink's consumer
    properties, or ValueError naming the property that has none."""
    if not isinstance(props, dict):
        raise ValueError("must map Flink consumer property names to values")
    out: JsonObject = {}
    credentials: dict[str, str] = {}
    efo: JsonObject = {}
    consumer_arns: dict[str, str] = {}
    polling: JsonObject = {}
    retries: dict[str, JsonObject] = {}
    initpos = timestamp = provider = None
    for key, value in props.items():
        value_s = str(value).strip()
        if key == "aws.region":
            out["region"] = value_s
        elif key == "aws.endpoint":
            out["endpoint_url"] = value_s
        elif key == "aws.credentials.provider":
            provider = value_s.upper()
            if provider not in ("AUTO", "BASIC", "ASSUME_ROLE", "PROFILE"):
                raise ValueError(f"{key}: {value_s!r} is not supported (AUTO, BASIC, "
                                 "ASSUME_ROLE or PROFILE); use an Airflow AWS connection "
                                 "(conn_id) for other providers")
        elif key == "aws.credentials.provider.basic.accesskeyid":
            credentials["access_key_id"] = value_s
        elif key == "aws.credentials.provider.basic.secretkey":
            credentials["secret_access_key"] = value_s
        elif key in _AUTH:
            out[_AUTH[key]] = value_s
        elif key == "flink.stream.initpos":
            initpos = value_s.upper()
            if initpos not in _INITPOS:
                raise ValueError(f"{key}: {value_s!r} is not one of {', '.join(sorted(_INITPOS))}")
        elif key == "flink.stream.initpos.timestamp":
            timestamp = value_s
        elif key == "flink.stream.timestamp.date.format":
            out["timestamp_format"] = value_s
        elif key == "flink.stream.recordpublisher":
            if value_s.upper() not in _PUBLISHER:
                raise ValueError(f"{key}: {value_s!r} is not POLLING or EFO")
            out["reader"] = _PUBLISHER[value_s.upper()]
        elif key == "flink.stream.efo.consumername":
            efo["consumer_name"] = value_s
        elif key == "flink.stream.efo.registration":
            if value_s.upper() not in _REGISTRATION:
                raise ValueError(f"{key}: {value_s!r} is not LAZY, EAGER or NONE")
            efo["registration"] = _REGISTRATION[value_s.upper()]
        elif key.startswith("flink.stream.efo.consumerarn."):
            consumer_arns[key[len("flink.stream.efo.consumerarn."):]] = value_s
        elif key == "flink.shard.getrecords.maxrecordcount":
            polling["max_records"] = _int(key, value_s)
        elif key == "flink.shard.getrecords.intervalmillis":
            polling["interval"] = f"{_millis(key, value_s)}ms"
        elif _retry(key, value_s, retries):
            pass
        elif key in _NOT_FOR_BOUNDED:
            raise ValueError(f"{key} is not supported: {_NOT_FOR_BOUNDED[key]}")
        else:
            raise ValueError(f"{key} is not a supported Flink Kinesis consumer property")
    if credentials:
        out["credentials"] = _json(credentials)
    if consumer_arns:
        efo["consumer_arn"] = _json(consumer_arns)
    if provider == "BASIC" and len(credentials) != 2:
        raise ValueError("aws.credentials.provider BASIC needs "
                         "aws.credentials.provider.basic.accesskeyid and .secretkey")
    if provider == "ASSUME_ROLE" and "role_arn" not in out:
        raise ValueError("aws.credentials.provider ASSUME_ROLE needs "
                         "aws.credentials.provider.role.arn")
    if initpos == "AT_TIMESTAMP":
        if timestamp is None:
            raise ValueError("flink.stream.initpos AT_TIMESTAMP needs "
                             "flink.stream.initpos.timestamp")
        out["start"] = {"AT_TIMESTAMP": timestamp}
    elif initpos:
        out["start"] = initpos
    elif timestamp is not None:
        raise ValueError("flink.stream.initpos.timestamp is only used with initpos AT_TIMESTAMP")
    for name, section in (("efo", efo), ("polling", polling), ("retries", _json(retries))):
        if section:
            out[name] = section
    return out


def _json(values: Mapping[str, JsonValue]) -> JsonObject:
    return dict(values)


def _retry(key: str, value: Any, retries: dict[str, JsonObject]) -> bool:
    for prefix, api in _RETRY_APIS.items():
        if key.startswith(prefix + "."):
            field = _RETRY_FIELDS.get(key[len(prefix) + 1:])
            if field is None:
                return False
            if field == "max_retries":
                retries.setdefault(api, {})[field] = _int(key, value)
            elif field == "backoff_exponent":
                try:
                    retries.setdefault(api, {})[field] = float(value)
                except ValueError:
                    raise ValueError(f"{key}: {value!r} is not a number") from None
            else:
                retries.setdefault(api, {})[field] = f"{_millis(key, value)}ms"
            return True
    return False


def _int(key: str, value: Any) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{key}: {value!r} is not a whole number") from None


def _millis(key: str, value: Any) -> int:
    """A Flink duration in milliseconds (a whole number, 0 or more)."""
    ms = _int(key, value)
    if ms < 0:
        raise ValueError(f"{key}: {ms} is negative; give milliseconds, 0 or more")
    return ms


_ORIGINS = {"region": "aws.region", "role_arn": "aws.credentials.provider.role.arn",
            "session_name": "aws.credentials.provider.role.sessionName",
            "external_id": "aws.credentials.provider.role.externalId",
            "endpoint_url": "aws.endpoint",
            "credentials": "aws.credentials.provider",
            "credentials.access_key_id": "aws.credentials.provider.basic.accesskeyid",
            "credentials.secret_access_key": "aws.credentials.provider.basic.secretkey",
            "profile": "aws.credentials.provider.profile.name",
            "start": "flink.stream.initpos",
            "timestamp_format": "flink.stream.timestamp.date.format",
            "reader": "flink.stream.recordpublisher",
            "efo.registration": "flink.stream.efo.registration",
            "efo.consumer_name": "flink.stream.efo.consumername",
            "efo.consumer_arn": "flink.stream.efo.consumerarn.",
            "polling.max_records": "flink.shard.getrecords.maxrecordcount",
            "polling.interval": "flink.shard.getrecords.intervalmillis"}


def flink_origin(native: str, given: list[str]) -> str | None:
    """The Flink key the user wrote that became the native field ``native`` (relative to the
    kinesis block, e.g. ``polling.max_records``), if any."""
    wanted = _ORIGINS.get(native)
    if native.startswith("retries."):
        _, api, field = (native.split(".") + ["", ""])[:3]
        prefixes = [p for p, a in _RETRY_APIS.items() if a == api]
        keys = [f"{p}.{k}" for p in prefixes for k, f in _RETRY_FIELDS.items() if f == field]
        return next((k for k in keys if k in given), None)
    if native == "start":
        if "flink.stream.initpos.timestamp" in given:
            return "flink.stream.initpos.timestamp"
    if wanted is None:
        return None
    return next((k for k in given if k == wanted or (wanted.endswith(".") and
                                                     k.startswith(wanted))), None)
