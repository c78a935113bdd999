"""Spark's Kafka source options → a KafkaSource. No PySpark imports: plain option parsing.

``subscribe`` | ``subscribePattern`` | ``assign``, ``startingOffsets``, ``endingOffsets``,
``startingTimestamp``, ``endingTimestamp``, ``failOnDataLoss``, ``kafka.*``; plus
``maxRecordsPerSplit`` and ``client``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config.options import client_properties, json_option
from ..errors import ConfigError

if TYPE_CHECKING:
    from .source import KafkaSource


def kafka_from_options(opts: dict[str, str]) -> tuple[KafkaSource, dict[str, Any]]:
    """``opts`` has lower-cased keys. Returns the source and its client properties."""
    from .positions import Earliest, Latest, Specified, Timestamp
    from .source import KafkaSource
    from .subscriber import PartitionSet, TopicList, TopicPattern, parse_partition

    props = client_properties(opts, "kafka.")
    if "bootstrap.servers" not in props:
        raise ConfigError("option kafka.bootstrap.servers is required")
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise ConfigError("give exactly one of the options subscribe, subscribePattern, assign")
    if given[0] == "subscribe":
        subscriber: Any = TopicList(tuple(t.strip() for t in opts["subscribe"].split(",")))
    elif given[0] == "subscribepattern":
        subscriber = TopicPattern(opts["subscribepattern"])
    else:
        assigned = json_option(opts, "assign")
        subscriber = PartitionSet(tuple(parse_partition(f"{t}:{p}")
                                        for t, parts in assigned.items() for p in parts))

    def position(name, ts_name, default, stop):
        if ts_name in opts:
            return Timestamp(int(opts[ts_name]))
        text = opts.get(name)
        if text is None:
            return default
        if text.strip() == "earliest" and not stop:
            return Earliest()
        if text.strip() == "latest":
            return Latest()
        offsets = {f"{t}:{p}": o for t, parts in json_option(opts, name).items()
                   for p, o in parts.items()}
        # Spark's convention: -2 earliest, -1 latest.
        special = {k: o for k, o in offsets.items() if o in (-1, -2)}
        if special:
            raise ConfigError(f"option {name}: use 'earliest'/'latest' instead of -2/-1 "
                              f"(for {', '.join(special)})")
        return Specified(offsets)

    source = KafkaSource(
        subscriber=subscriber,
        start=position("startingoffsets", "startingtimestamp", Earliest(), False),
        stop=position("endingoffsets", "endingtimestamp", Latest(), True),
        bootstrap_servers=props["bootstrap.servers"],
        properties={k: v for k, v in props.items() if k != "bootstrap.servers"},
        client=opts.get("client", "confluent-kafka"),
        on_data_loss="fail" if opts.get("failondataloss", "true").lower() == "true" else "skip",
        max_records_per_split=int(opts.get("maxrecordspersplit", 1_000_000)))
    return source, props

