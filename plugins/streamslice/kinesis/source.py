"""Kinesis Data Streams as a streamslice ``Source``: the ``kinesis:`` block, shard planning,
polling and Enhanced Fan-Out readers, checkpoints from what the readers saw, EFO setup and
teardown tasks."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..aws import AwsAuth
from ..sources import LifecycleTask, ReadRequest, ResetTarget, Source, SourcePlan
from ..splits import NO_POSITION
from .polling import PollingSettings

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    import pyarrow as pa

    from ..config.fields import Fields
    from ..lineage import DatasetName
    from ..planning.plan import ReadPlan
    from ..reading.decode import Decoder
    from ..sources import PageSection, PlanRequest
    from ..splits import PositionText
    from .positions import Position, Stop
    from .reader import KinesisSplitReader
    from .split import KinesisSplit

LIFECYCLE = "streamslice.kinesis.lifecycle"


@dataclass(frozen=True)
class KinesisSource(Source["KinesisSplit"]):
    streams: tuple[str, ...]  # names or ARNs
    start: Position
    stop: Stop
    region: str | None = None
    endpoint_url: str | None = None
    conn_id: str | None = None
    credentials: dict[str, str] = field(default_factory=dict)  # static keys (Flink BASIC)
    aws: AwsAuth = field(default_factory=AwsAuth)  # profile, role to assume (no secrets)
    reader: str = "polling"  # or "efo"
    efo_registration: str = "per_run"
    efo_consumer_name: str | None = None
    efo_consumer_arns: dict[str, str] = field(default_factory=dict)  # registration none
    efo_sweep_after_ms: int = 3_600_000
    polling: PollingSettings = field(default_factory=PollingSettings)
    on_data_loss: str = "fail"

    kind = "kinesis"
    option_prefix = "aws."
    options = ("streamName", "startingPosition", "startingTimestamp", "endingTimestamp",
               "region", "endpointUrl", "consumerArns")
    conn_type = "aws"
    connection_hook = "streamslice.airflow.hooks.aws_properties"
    lag_unit = "ms"
    ambient_secrets = ("access_key_id", "secret_access_key", "session_token")
    split_noun = ("shard", "shards")
    raw_columns = ("data",)
    verify_columns = (("stream", "shardId"), None)

    # -- configuration ----------------------------------------------------------------------
    def extras(self) -> tuple[str, ...]:
        return ("kinesis",)

    @classmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> KinesisSource:
        from .config import parse_kinesis
        return cls(**parse_kinesis(f, mode, pipeline))

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[KinesisSource, dict[str, Any]]:
        from .spark_options import kinesis_from_options
        fields, given = kinesis_from_options(options)
        source = cls(**fields)
        return source, source.client_properties(given)

    def client_properties(self, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        props = dict(resolved or {})
        for key, value in (("region", self.region), ("endpoint_url", self.endpoint_url)):
            if value:
                props[key] = value
        props.update(self.aws.to_dict())
        props.update(self.credentials)
        return props

    def connection_hints(self) -> dict[str, Any]:
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

    # -- planning ---------------------------------------------------------------------------
    def split_keys(self, properties: dict[str, Any]) -> list[str]:
        from .client import make_client
        return list(self._shards(make_client(properties))[0])

    def _shards(self, client: Any) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """({"stream:shardId-…": (stream name, shard id)}, {stream name: ARN})."""
        from .planner import list_shards, stream_names
        keys, arns = {}, {}
        for ref in self.streams:
            name, arn = stream_names(client, ref)
            arns[name] = arn
            keys.update({f"{name}:{s['ShardId']}": (name, s["ShardId"])
                         for s in list_shards(client, arn)})
        return keys, arns

    def plan(self, request: PlanRequest) -> SourcePlan:
        from .planner import plan_kinesis
        return plan_kinesis(self, request)

    def reset_positions(self, to: Any, properties: dict[str, Any]) -> ResetTarget:
        """Sequence numbers are checked against their shards (GetShardIterator
        AT_SEQUENCE_NUMBER), so a wrong one is refused now rather than failing the next read;
        the shards they do not name start over from the trim horizon, which the reset asks
        the user to confirm."""
        from .checkpoint import reset_target
        if not (isinstance(to, dict) and "offsets" in to):
            return reset_target(to, [], int(time.time() * 1000))
        from .client import make_client
        from .planner import check_sequence_numbers
        client = make_client(properties)
        shards, arns = self._shards(client)
        target = reset_target(to, list(shards), int(time.time() * 1000))
        for stream in arns:
            named = {shards[k][1]: v["at"] for k, v in target.positions.items()
                     if shards[k][0] == stream}
            check_sequence_numbers(client, named, {sid: name for name, sid in shards.values()
                                                   if name == stream}, arns, "--offsets")
        unnamed = sorted(set(shards) - set(target.positions))
        if not unnamed:
            return target
        return ResetTarget(target.positions, target.source_state, confirm=(
            f"{len(unnamed)} shard(s) not named in --offsets go back to the trim horizon "
            f"(TRIM_HORIZON) and read, and publish again, what they already published: "
            f"{', '.join(unnamed)}"))

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

    def asset_extra(self) -> dict[str, Any]:
        return {"efo": self.reader == "efo"}

    def page_sections(self, properties: Callable[[], dict[str, Any]],
                      running: frozenset[str] = frozenset()) -> list[PageSection]:
        if self.reader != "efo":
            return []
        from .lifecycle import consumers_section
        return [consumers_section(self, properties, running)]

    def page_action(self, name: str, target: str, properties: Callable[[], dict[str, Any]],
                    running: frozenset[str] = frozenset()) -> str:
        if self.reader == "efo" and name == "deregister":
            from .lifecycle import deregister_leaked
            return deregister_leaked(self, target, properties, running)
        return super().page_action(name, target, properties, running)

    @classmethod
    def add_cli_commands(cls, commands: argparse._SubParsersAction[Any]) -> None:
        from .cli import add_commands
        add_commands(commands)

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        if self.reader != "efo":
            return {}
        if self.efo_registration == "none":
            return {"consumer_arns": dict(self.efo_consumer_arns)}
        return {"consumer_arns": setup_results.get("efo_register")}

    # -- reading ----------------------------------------------------------------------------
    @classmethod
    def split_from_dict(cls, data: dict[str, Any]) -> KinesisSplit:
        from ..planning.plan import build
        from .split import KinesisSplit
        split: KinesisSplit = build(KinesisSplit, data, "Kinesis split")
        return split

    @classmethod
    def record_schema(cls, decoder: Decoder, plan: ReadPlan[KinesisSplit]) -> pa.Schema:
        from .reader import record_schema
        return record_schema(decoder, bool(plan.interval and plan.interval.event_time))

    @classmethod
    def open_reader(cls, split: KinesisSplit, request: ReadRequest) -> KinesisSplitReader:
        from .reader import KinesisSplitReader
        info = request.plan.source_info  # region and endpoint are not secrets: the plan has them
        props = {**{k: info[k] for k in ("region", "endpoint_url") if info.get(k)},
                 **request.properties}
        arns = request.options.get("consumer_arns") or info.get("consumer_arns") or {}
        return KinesisSplitReader(split, properties=props, decoder=request.decoder,
                                  staging=request.staging, fault=request.fault,
                                  settings=PollingSettings.from_dict(info.get("polling")),
                                  consumer_arn=arns.get(split.stream),
                                  interval=request.plan.interval)

    # -- commit -----------------------------------------------------------------------------
    @classmethod
    def next_positions(cls, plan: ReadPlan[KinesisSplit], summaries: dict[int, dict[str, Any]],
                       base: dict[str, Any]) -> dict[str, Any]:
        from .checkpoint import next_positions
        return next_positions(plan, summaries, base)

    @classmethod
    def lineage_dataset(cls, plan: ReadPlan[KinesisSplit], split: KinesisSplit) -> DatasetName:
        from ..lineage import kinesis_dataset
        return kinesis_dataset(split.stream_arn or plan.source_info["streams"][split.stream])

    @classmethod
    def position_text(cls, position: Any) -> PositionText:
        from .positions import position_text
        return NO_POSITION if position is None else position_text(position)
