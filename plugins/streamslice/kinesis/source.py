"""Kinesis Data Streams as a streamslice ``Source``: the ``kinesis:`` block and Spark options,
its AWS connection, EFO setup and teardown tasks, the page's consumer list and the ``efo``
commands; and its roles: ``planner.KinesisPlanner`` (shards, resharding, resets),
``reader.KinesisReaders`` (polling and Enhanced Fan-Out readers, checkpoints from what they
saw) and ``split.KinesisSplitSerializer``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..aws import AwsAuth
from ..errors import StreamsliceError
from ..sources import LifecycleTask, Source
from .polling import PollingSettings
from .split import KinesisSplit, KinesisSplitSerializer
from .stream_options import NAMES as STREAM_NAMES

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ..config.fields import Fields
    from ..sources import CommandKit, OnDataLoss, PageSection, Properties
    from .config import Reader, Registration
    from .planner import KinesisPlanner
    from .positions import Position, Stop
    from .reader import KinesisReaders
    from .spark_options import SparkKinesis
    from .spark_stream import KinesisStream

LIFECYCLE = "streamslice.kinesis.lifecycle"


@dataclass(frozen=True)
class KinesisSource(Source[KinesisSplit]):
    streams: tuple[str, ...]  # names or ARNs
    start: Position
    stop: Stop
    region: str | None = None
    endpoint_url: str | None = None
    conn_id: str | None = None
    credentials: dict[str, str] = field(default_factory=dict)  # static keys (Flink BASIC)
    aws: AwsAuth = field(default_factory=AwsAuth)  # profile, role to assume (no secrets)
    reader: Reader = "polling"
    efo_registration: Registration = "per_run"
    efo_consumer_name: str | None = None
    efo_consumer_arns: dict[str, str] = field(default_factory=dict)  # registration none
    efo_sweep_after_ms: int = 3_600_000
    polling: PollingSettings = field(default_factory=PollingSettings)
    on_data_loss: OnDataLoss = "fail"

    kind = "kinesis"
    option_prefix = "aws."
    options = ("streamName", "startingPosition", "startingTimestamp", "endingTimestamp",
               "region", "endpointUrl", "consumerArns")
    stream_options = STREAM_NAMES  # spark.readStream's: the AWS Kinesis connector's names
    conn_type = "aws"
    connection_hook = "streamslice.airflow.hooks.aws_properties"
    lag_unit = "ms"
    ambient_secrets = ("access_key_id", "secret_access_key", "session_token")
    split_noun = ("shard", "shards")

    # -- configuration ----------------------------------------------------------------------
    def extras(self) -> tuple[str, ...]:
        return ("kinesis",)

    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> KinesisSource:
        from .config import parse_kinesis
        return parse_kinesis(f, mode, pipeline)

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[KinesisSource, Properties]:
        from .spark_options import kinesis_from_options
        read, given = kinesis_from_options(options)
        source = cls._from_spark(read)
        return source, source.client_properties(given)

    @classmethod
    def stream(cls, options: dict[str, str]) -> KinesisStream:
        """A ``spark.readStream`` query's offsets and limits from the AWS Kinesis connector
        for Spark's options (lower-cased keys; ``spark_stream``)."""
        from .spark_stream import KinesisStream
        from .stream_options import stream_from_options
        read, given, settings = stream_from_options(options)
        source = cls._from_spark(read)
        return KinesisStream(source, source.client_properties(given), settings)

    @classmethod
    def _from_spark(cls, read: SparkKinesis) -> KinesisSource:
        return cls(streams=read.streams, start=read.start, stop=read.stop, region=read.region,
                   endpoint_url=read.endpoint_url, reader=read.reader,
                   efo_registration=read.efo_registration,
                   efo_consumer_name=read.efo_consumer_name,
                   efo_consumer_arns=read.efo_consumer_arns, polling=read.polling,
                   on_data_loss=read.on_data_loss)

    def client_properties(self, resolved: Properties | None = None) -> Properties:
        props = dict(resolved or {})
        for key, value in (("region", self.region), ("endpoint_url", self.endpoint_url)):
            if value:
                props[key] = value
        props.update(self.aws.to_dict())
        props.update(self.credentials)
        return props

    def connection_hints(self) -> dict[str, str | None]:
        return {"region": self.region, "service": "kinesis"}

    def describe(self) -> str:
        return ", ".join(self.streams) + (" (EFO)" if self.reader == "efo" else "")

    def describe_where(self) -> str:
        return f"Kinesis `{self.region or 'default region'}`"

    def describe_bounds(self, mode: str) -> str:
        if mode == "interval":
            return ("AT_TIMESTAMP `data_interval_start` → first record arriving at or after "
                    "`data_interval_end`")
        return f"{self.start.describe()} (new shards) / checkpoint → {self.stop.describe()}"

    def describe_start(self) -> str:
        return self.start.describe()

    def lifecycle_tasks(self) -> list[LifecycleTask]:
        if self.reader != "efo" or self.efo_registration == "none":
            return []
        tasks = [LifecycleTask("efo_register", f"{LIFECYCLE}.register_consumers", "setup",
                               "Register (or reuse) the EFO consumer and wait until it is "
                               "ACTIVE.")]
        if self.efo_registration == "per_run":
            tasks += [LifecycleTask("efo_sweep", f"{LIFECYCLE}.sweep_consumers", "before_setup",
                                    "Deregister consumers left over by crashed runs."),
                      LifecycleTask("efo_deregister", f"{LIFECYCLE}.deregister_consumers",
                                    "teardown", "Deregister this run's consumer, also after "
                                    "a failed read.")]
        return tasks

    def asset_extra(self) -> dict[str, str | int | float | bool | None]:
        return {"efo": self.reader == "efo"}

    def page_sections(self, properties: Callable[[], Properties],
                      running: frozenset[str] = frozenset()) -> list[PageSection]:
        if self.reader != "efo":
            return []
        from .lifecycle import consumers_section
        return [consumers_section(self, properties, running)]

    def page_action(self, name: str, target: str, properties: Callable[[], Properties],
                    running: frozenset[str] = frozenset()) -> str:
        if self.reader == "efo" and name == "deregister":
            from .lifecycle import deregister_leaked
            return deregister_leaked(self, target, properties, running)
        raise StreamsliceError(f"a {self.kind} pipeline's page has no action {name!r}")

    @classmethod
    def add_cli_commands(cls, commands: argparse._SubParsersAction[Any],
                         kit: CommandKit) -> None:
        from .cli import add_commands
        add_commands(commands, kit)

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        if self.reader != "efo":
            return {}
        if self.efo_registration == "none":
            return {"consumer_arns": dict(self.efo_consumer_arns)}
        return {"consumer_arns": setup_results.get("efo_register")}

    # -- roles ----------------------------------------------------------------------------
    def planner(self) -> KinesisPlanner:
        from .planner import KinesisPlanner
        return KinesisPlanner(self)

    @classmethod
    def readers(cls) -> KinesisReaders:
        from .reader import KinesisReaders
        return KinesisReaders()

    @classmethod
    def serializer(cls) -> KinesisSplitSerializer:
        return KinesisSplitSerializer()
