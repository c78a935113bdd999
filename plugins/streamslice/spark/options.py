"""Data source options → ReadPlan. No PySpark imports: this is plain option parsing.

Either ``plan`` (a ReadPlan as JSON, as the Airflow DAG passes it) or the options Spark's own
Kafka source users know: ``subscribe`` | ``subscribePattern`` | ``assign``,
``startingOffsets``, ``endingOffsets``, ``startingTimestamp``, ``endingTimestamp``,
``failOnDataLoss``; plus ``maxRecordsPerSplit``, ``valueFormat``, ``keyFormat``, ``schema``
(JSON ``{"field": "type"}``), ``onDecodeError`` and ``client``.
"""
import json

from ..errors import ConfigError
from ..plan import ReadPlan


def client_properties(options, prefix):
    return {k[len(prefix):]: v for k, v in options.items() if k.lower().startswith(prefix)}


def plan_from_options(options, source_kind):
    opts = {k.lower(): v for k, v in options.items()}
    if "plan" in opts:
        try:
            return ReadPlan.from_json(opts["plan"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"option plan is not a streamslice ReadPlan: {exc}") from None
    if source_kind != "kafka":
        from ..kinesis.options import kinesis_plan_from_options
        return kinesis_plan_from_options(opts)
    return _kafka_plan(opts)


def _kafka_plan(opts):
    from ..config import Decoding
    from ..kafka.config import KafkaSource
    from ..kafka.initializers import Earliest, Latest, Specified, Timestamp, parse_position
    from ..kafka.subscriber import PartitionSet, TopicList, TopicPattern, parse_partition
    from ..planning import plan_run

    props = client_properties(opts, "kafka.")
    if "bootstrap.servers" not in props:
        raise ConfigError("option kafka.bootstrap.servers is required")
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise ConfigError("give exactly one of the options subscribe, subscribePattern, assign")
    if given[0] == "subscribe":
        subscriber = TopicList(tuple(t.strip() for t in opts["subscribe"].split(",")))
    elif given[0] == "subscribepattern":
        subscriber = TopicPattern(opts["subscribepattern"])
    else:
        assigned = _json(opts, "assign")
        subscriber = PartitionSet(tuple(parse_partition(f"{t}:{p}")
                                        for t, parts in assigned.items() for p in parts))

    def position(name, ts_name, default, stop):
        if ts_name in opts:
            return Timestamp(int(opts[ts_name]))
        text = opts.get(name)
        if text is None:
            return default
        if text.strip() in ("earliest", "latest"):
            return parse_position(text.strip(), stop=stop) if text.strip() != "earliest" \
                else Earliest()
        offsets = {f"{t}:{p}": o for t, parts in _json(opts, name).items()
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
    schema = _json(opts, "schema") if "schema" in opts else {}
    decode = Decoding(value=opts.get("valueformat", "json" if schema else "raw"),
                      key=opts.get("keyformat", "raw"), schema=tuple(schema.items()),
                      on_error=opts.get("ondecodeerror", "fail"))
    return plan_run(source, pipeline=opts.get("pipeline", "adhoc"), mode="bounded",
                    decode=decode, properties=props)


def _json(opts, name):
    try:
        value = json.loads(opts[name])
    except ValueError as exc:
        raise ConfigError(f"option {name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"option {name} must be a JSON object")
    return value
