"""Kafka as a streamslice ``Source``: the ``kafka:`` block, planning through kafka-python's
admin calls, readers on confluent-kafka (or kafka-python), resets, the consumer-group mirror."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..aws import AwsAuth
from ..errors import ConfigError, SourceError
from ..sources import ReadRequest, ResetTarget, Source, SourcePlan
from ..splits import NO_POSITION, PositionText
from .spark_options import EARLIEST, LATEST, OPTIONS

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa

    from ..config.fields import Fields
    from ..lineage import DatasetName
    from ..planning.plan import ReadPlan
    from ..reading.decode import Decoder
    from ..sources import PlanRequest
    from .admin import KafkaAdmin
    from .positions import Position as KafkaPosition
    from .reader import KafkaSplitReader
    from .spark_options import SparkRead
    from .split import KafkaSplit
    from .subscriber import Subscriber


@dataclass(frozen=True)
class KafkaSource(Source["KafkaSplit"]):
    subscriber: Subscriber
    start: KafkaPosition
    stop: KafkaPosition
    bootstrap_servers: str | None = None
    conn_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    client: str = "confluent-kafka"
    on_data_loss: str = "fail"
    max_records_per_split: int = 1_000_000
    commit_group: str | None = None  # mirrors progress for lag monitors; never read back
    spark: SparkRead | None = None  # a read given as Spark's Kafka options (kafka.options)
    auth: str | None = None  # "msk_iam": Amazon MSK IAM (SASL/OAUTHBEARER, AWS-signed)
    aws: AwsAuth = field(default_factory=AwsAuth)  # the identity MSK IAM tokens are signed by

    kind = "kafka"
    option_prefix = "kafka."
    options = OPTIONS
    conn_type = "kafka"
    connection_hook = "streamslice.airflow.hooks.kafka_properties"
    lag_unit = "records"
    raw_columns = ("key", "value")
    verify_columns = (("topic", "partition"), "offset")

    # -- configuration ----------------------------------------------------------------------
    def extras(self) -> tuple[str, ...]:
        return ("kafka", "msk-iam") if self.auth == "msk_iam" else ("kafka",)

    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> KafkaSource:
        from .config import parse_kafka
        return cls(**parse_kafka(f, mode, pipeline))

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[KafkaSource, dict[str, Any]]:
        from .spark_options import kafka_from_options
        fields, properties = kafka_from_options(options)
        return cls(**fields), properties

    def client_properties(self, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        props = dict(resolved or {})
        props.update(self.properties)
        if self.bootstrap_servers:
            props["bootstrap.servers"] = self.bootstrap_servers
        from .msk_iam import AUTH_KEY, detected, with_msk_iam
        if self.auth == "msk_iam" or (AUTH_KEY not in props and detected(props)):
            props = with_msk_iam(props, self.aws)
        return props

    def describe(self) -> str:
        return self.subscriber.describe()

    def describe_where(self) -> str:
        return f"Kafka `{self.bootstrap_servers or 'connection ' + str(self.conn_id)}`"

    def describe_bounds(self, mode: str) -> str:
        if mode == "interval":
            return "`data_interval_start` → `data_interval_end` by record timestamp"
        if self.spark is not None:
            return f"{self.spark.start.option} → {self.spark.stop.option}"
        return f"{self.start.describe()} → {self.stop.describe()}"

    def describe_start(self) -> str:
        return self.start.describe() if self.start is not None else "the options' start"

    # -- planning ---------------------------------------------------------------------------
    def _admin(self, properties: dict[str, Any]) -> KafkaAdmin:
        from .admin import KafkaAdmin
        return KafkaAdmin(properties)

    def split_keys(self, properties: dict[str, Any]) -> list[str]:
        with self._admin(properties) as admin:
            return [tp.key for tp in self.subscriber.partitions(admin)]

    def plan(self, request: PlanRequest) -> SourcePlan:
        from .planner import plan_kafka
        from .spark_read import plan_spark_read
        with self._admin(request.properties) as admin:
            if self.spark is not None:
                return plan_spark_read(self, admin, request)
            return plan_kafka(self, admin, request)

    def reset_positions(self, to: Any, properties: dict[str, Any]) -> ResetTarget:
        """``to``: earliest | latest | {timestamp: ms} | {offsets: {"topic:p": offset}}."""
        from .positions import Committed, PlanContext, parse_position
        if to in ("TRIM_HORIZON", "LATEST"):
            to = "earliest" if to == "TRIM_HORIZON" else "latest"
        try:
            spec = parse_position(to)
        except ValueError as exc:
            raise ConfigError(f"reset target: {exc}") from None
        if isinstance(spec, Committed):
            raise ConfigError("reset target: give earliest, latest, a timestamp or offsets")
        with self._admin(properties) as admin:
            tps = self.subscriber.partitions(admin)
            known = {tp.key for tp in tps}
            unknown = sorted(set(getattr(spec, "offsets", {})) - known)
            if unknown:
                raise ConfigError(f"reset target: {unknown[0]} is not a partition this "
                                  f"pipeline reads ({', '.join(sorted(known))})")
            ctx = PlanContext(admin, admin.beginning_offsets(tps), admin.end_offsets(tps))
            return ResetTarget({tp.key: off for tp, off in spec.resolve(tps, ctx).items()})

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        return {"client": self.client}

    @classmethod
    def spark_read_options(cls, options: dict[str, str]) -> dict[str, Any]:
        """A Spark user may choose the client beside a plan (``.option("client", …)``)."""
        return {"client": options["client"]} if "client" in options else {}

    @classmethod
    def resolve_splits(cls, splits: list[KafkaSplit],
                       properties: Callable[[], dict[str, Any]]) -> list[KafkaSplit]:
        """A Spark read's timestamps become offsets and its ranges are checked
        (``kafka.binding``)."""
        if not any(s.unresolved for s in splits):
            return splits
        from .binding import resolve
        return resolve(splits, properties())

    def after_commit(self, positions: dict[str, Any],
                     properties: Callable[[], dict[str, Any]]) -> None:
        if not self.commit_group:
            return
        from .groups import commit_to_group
        try:
            commit_to_group(properties(), self.commit_group, positions)
        except SourceError as exc:  # reporting only: never fails the run
            import logging
            logging.getLogger("streamslice").warning(
                "%s (the checkpoint in Airflow is unaffected)", exc)

    # -- reading ----------------------------------------------------------------------------
    @classmethod
    def split_from_dict(cls, data: dict[str, Any]) -> KafkaSplit:
        from ..planning.plan import build
        from .split import KafkaSplit
        split: KafkaSplit = build(KafkaSplit, data, "Kafka split")
        return split

    @classmethod
    def record_schema(cls, decoder: Decoder, plan: ReadPlan[KafkaSplit]) -> pa.Schema:
        from .reader import record_schema
        return record_schema(decoder, plan.mode == "interval",
                             plan.source_info.get("include_headers", True),
                             bool(plan.interval and plan.interval.event_time))

    @classmethod
    def open_reader(cls, split: KafkaSplit, request: ReadRequest) -> KafkaSplitReader:
        from .reader import KafkaSplitReader
        client = request.options.get("client") or request.plan.source_info.get("client")
        return KafkaSplitReader(split, properties=request.properties,
                                client=client or "confluent-kafka", decoder=request.decoder,
                                interval=request.plan.interval, staging=request.staging,
                                fault=request.fault,
                                include_headers=request.plan.source_info.get("include_headers",
                                                                             True))

    @classmethod
    def lineage_dataset(cls, plan: ReadPlan[KafkaSplit], split: KafkaSplit) -> DatasetName:
        from ..lineage import kafka_dataset
        return kafka_dataset(plan.source_info["bootstrap_servers"], split.topic)

    @classmethod
    def position_text(cls, position: Any) -> PositionText:
        """Offsets as they are (people compare them digit by digit); Spark-option splits
        not bound yet start at ``earliest`` and stop at ``latest``."""
        if position is None:
            return NO_POSITION
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(f"not a Kafka offset: {position!r}")
        text = {EARLIEST: "earliest", LATEST: "latest"}.get(position, str(position))
        return PositionText(text, text)
