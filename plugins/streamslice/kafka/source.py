"""Kafka as a streamslice ``Source``: the ``kafka:`` block and Spark's Kafka options, its
connection, the consumer-group mirror, and its roles: ``planner.KafkaPlanner`` (kafka-python's
admin calls; resets), ``reader.KafkaReaders`` (confluent-kafka or kafka-python) and
``split.KafkaSplitSerializer``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..aws import AwsAuth
from ..errors import SourceError
from ..sources import Source
from .spark_options import OPTIONS
from .split import KafkaSplit, KafkaSplitSerializer

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.fields import Fields
    from ..sources import OnDataLoss, Properties
    from ..splits import Positions
    from .config import Auth, Client
    from .planner import KafkaPlanner
    from .positions import Position as KafkaPosition
    from .reader import KafkaReaders
    from .spark_options import SparkRead
    from .spark_stream import KafkaStream
    from .subscriber import Subscriber


@dataclass(frozen=True)
class KafkaSource(Source[KafkaSplit]):
    subscriber: Subscriber
    start: KafkaPosition | None  # None where a Spark read binds its own (``spark``)
    stop: KafkaPosition | None
    bootstrap_servers: str | None = None
    conn_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    client: Client = "confluent-kafka"
    on_data_loss: OnDataLoss = "fail"
    max_records_per_split: int = 1_000_000
    commit_group: str | None = None  # mirrors progress for lag monitors; never read back
    spark: SparkRead | None = None  # a read given as Spark's Kafka options (kafka.options)
    auth: Auth | None = None  # "msk_iam": Amazon MSK IAM (SASL/OAUTHBEARER, AWS-signed)
    aws: AwsAuth = field(default_factory=AwsAuth)  # the identity MSK IAM tokens are signed by

    kind = "kafka"
    option_prefix = "kafka."
    options = OPTIONS
    conn_type = "kafka"
    connection_hook = "streamslice.airflow.hooks.kafka_properties"
    lag_unit = "records"
    ambient_secrets = ()

    # -- configuration ----------------------------------------------------------------------
    def extras(self) -> tuple[str, ...]:
        return ("kafka", "msk-iam") if self.auth == "msk_iam" else ("kafka",)

    def connection_hints(self) -> dict[str, str | None]:
        return {}

    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> KafkaSource:
        from .config import parse_kafka
        return parse_kafka(f, mode, pipeline)

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[KafkaSource, Properties]:
        from .spark_options import kafka_from_options
        f, properties = kafka_from_options(options)
        return cls(subscriber=f.subscriber, start=None, stop=None,
                   bootstrap_servers=f.bootstrap_servers, properties=f.properties,
                   client=f.client, on_data_loss=f.on_data_loss, spark=f.spark), properties

    @classmethod
    def stream(cls, options: dict[str, str]) -> KafkaStream:
        """A ``spark.readStream`` query's offsets and limits from Spark's Kafka streaming
        options (lower-cased keys; ``spark_stream``)."""
        from .spark_stream import KafkaStream, stream_from_options
        return KafkaStream(*stream_from_options(options))

    def client_properties(self, resolved: Properties | None = None) -> Properties:
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
        assert self.start is not None and self.stop is not None  # set unless ``spark`` is
        return f"{self.start.describe()} → {self.stop.describe()}"

    def describe_start(self) -> str:
        return self.start.describe() if self.start is not None else "the options' start"

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        return {"client": self.client}

    def after_commit(self, positions: Positions,
                     properties: Callable[[], Properties]) -> None:
        if not self.commit_group:
            return
        from .groups import commit_to_group
        try:
            commit_to_group(properties(), self.commit_group, positions)
        except SourceError as exc:  # reporting only: never fails the run
            import logging
            logging.getLogger("streamslice").warning(
                "%s (the checkpoint in Airflow is unaffected)", exc)

    # -- roles ----------------------------------------------------------------------------
    def planner(self) -> KafkaPlanner:
        from .planner import KafkaPlanner
        return KafkaPlanner(self)

    @classmethod
    def readers(cls) -> KafkaReaders:
        from .reader import KafkaReaders
        return KafkaReaders()

    @classmethod
    def serializer(cls) -> KafkaSplitSerializer:
        return KafkaSplitSerializer()
