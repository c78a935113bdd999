"""The ``kafka:`` block of a pipeline file."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from ..aws import parse_auth
from ..sources import ON_DATA_LOSS
from ..timestamps import INTERVAL_START
from .positions import Committed, IntervalEnd, Latest, Position, Timestamp, parse_position
from .properties import check_bootstrap_servers
from .subscriber import PartitionSet, Subscriber, TopicList, TopicPattern, parse_partition

if TYPE_CHECKING:
    from ..config.fields import Fields
    from .source import KafkaSource

Client = Literal["confluent-kafka", "kafka-python"]
Auth = Literal["msk_iam"]  # else the client properties' own SASL/SSL settings
CLIENTS: tuple[Client, ...] = ("confluent-kafka", "kafka-python")
AUTHS: tuple[Auth, ...] = ("msk_iam",)


def parse_kafka(f: Fields, mode: str, pipeline_name: str) -> KafkaSource:  # noqa: C901 - the kafka section's keys, one check each
    """``f`` is a Fields over the kafka mapping."""
    from .source import KafkaSource
    servers = f.parse("bootstrap_servers", check_bootstrap_servers, None)
    conn_id = f.str("conn_id", None)
    if not servers and not conn_id:
        raise f.error("needs bootstrap_servers or conn_id (an Airflow Kafka connection)")
    props = f.raw("properties", {}) or {}
    if not isinstance(props, dict):
        raise f.error("must map client property names to values", "properties")
    props = {str(k): str(v) for k, v in props.items()}
    if "bootstrap.servers" in props:
        props["bootstrap.servers"] = f.parse("properties", lambda p: check_bootstrap_servers(
            p["bootstrap.servers"]))

    given = [k for k in ("topics", "topic_pattern", "partitions") if f.has(k)]
    if len(given) != 1:
        raise f.error("give exactly one of topics, topic_pattern or partitions"
                      + (f" (got {', '.join(given)})" if given else ""))
    if given[0] == "topics":
        topics = f.list("topics")
        for t in topics:
            if not isinstance(t, str) or not t.strip():
                raise f.error(f"{t!r} is not a topic name", "topics")
        subscriber: Subscriber = TopicList(tuple(topics))
    elif given[0] == "topic_pattern":
        pattern = f.str("topic_pattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise f.error(f"{pattern!r} is not a valid regex: {exc}", "topic_pattern") from None
        subscriber = TopicPattern(pattern)
    else:
        subscriber = PartitionSet(tuple(f.parse(
            "partitions", lambda items: [parse_partition(i) for i in _as_list(items)])))

    if mode == "interval":
        for key in ("start", "stop"):
            if f.has(key):
                raise f.error("is set by the run's data interval in mode interval; remove it "
                              "(use mode incremental for offset-driven reads)", key)
        start: Position = Timestamp(INTERVAL_START)
        stop: Position = IntervalEnd()
    else:
        start = f.parse("start", parse_position, Committed())
        if not isinstance(start, Committed):
            start = Committed(start)  # the checkpoint wins; start applies to new partitions
        stop = f.parse("stop", lambda v: parse_position(v, stop=True), Latest())
        if isinstance(stop, Timestamp) and isinstance(stop.at, str):
            raise f.error(f"{stop.at} needs mode interval", "stop")
        if isinstance(start.fallback, Timestamp) and isinstance(start.fallback.at, str):
            raise f.error(f"{start.fallback.at} needs mode interval", "start")

    auth = f.str("auth", None, choices=AUTHS)
    aws_f = f.child("aws")
    aws = parse_auth(aws_f)
    aws_f.done()  # a misspelt key is an error, not an identity silently ignored
    if f.has("aws") and auth != "msk_iam":
        raise f.error("is only used with auth: msk_iam (the identity that signs the tokens)",
                      "aws")
    _check_offsets(f, start, stop)
    source = KafkaSource(
        subscriber=subscriber, start=start, stop=stop,
        bootstrap_servers=servers, conn_id=conn_id, properties=props,
        client=f.str("client", "confluent-kafka", choices=CLIENTS),
        on_data_loss=f.str("on_data_loss", "fail", choices=ON_DATA_LOSS),
        max_records_per_split=f.int("max_records_per_split", 1_000_000, minimum=1),
        commit_group=_commit_group(f, pipeline_name), auth=auth, aws=aws,
    )
    f.done()
    return source


def _commit_group(f: Fields, pipeline_name: str) -> str | None:
    value = f.raw("commit_offsets_to_group", True)
    if value is False:
        return None
    if value is True:
        return f"streamslice-{pipeline_name}"
    if isinstance(value, str) and value.strip():
        return value
    raise f.error("must be true, false or a consumer group name", "commit_offsets_to_group")


def _as_list(items: Any) -> list[Any]:
    if not isinstance(items, list) or not items:
        raise ValueError("must be a non-empty list of topic:partition")
    return items


def _check_offsets(f: Fields, start: Position, stop: Position) -> None:
    """Explicit start and stop offsets for the same partition must not cross."""
    from .positions import Specified
    first = getattr(start, "fallback", start)
    if not isinstance(first, Specified) or not isinstance(stop, Specified):
        return
    for key, until in sorted(stop.offsets.items()):
        if key in first.offsets and until < first.offsets[key]:
            raise f.error(f"{key}: offset {until} is below the start offset "
                          f"{first.offsets[key]}", "stop")
