"""The Source contract, split by role as Flink's FLIP-27 splits it, and the registry of sources.

A source package (``kafka/``, ``kinesis/``, ``files/``) is registered in ``SOURCES`` by one
line. Its ``Source`` is the configured source (its YAML block, its Spark options) and the
factory of three roles, each used where only it is needed:

- ``Planner`` (FLIP-27's ``SplitEnumerator``), made from the configured source on the driver:
  the partitions read now, one run's splits, a reset's positions;
- ``ReaderFactory`` (``Source.createReader``), for executors that have only the plan: the
  record schema, a ``SplitReader`` per split, and what its readers report (the columns the
  commit checks, the next checkpoint, the dataset a split reads);
- ``SplitSerializer`` (``SimpleVersionedSerializer`` of splits): a split to and from the plan's
  JSON, and its positions as people read them.

What only some sources have is a small capability protocol, asked with ``isinstance``:
``Connected`` (an Airflow connection), ``HasLifecycleTasks`` (setup and teardown tasks),
``HasPageSections`` (parts of the pipeline's page), ``HasCliCommands`` (``streamslice``
commands, handed a ``CommandKit`` by the CLI) and ``CommitListener`` (reporting after the
checkpoint advanced). Nothing outside the source packages branches on the source kind.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, runtime_checkable

from .registry import load, registered_class
from .splits import Positions, SplitT  # noqa: TC001 - ResetTarget resolves at run time

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    import pyarrow as pa

    from .commit.checkpoint import Checkpoint
    from .config.fields import Fields
    from .config.pipeline import PipelineConfig
    from .monitoring.lineage import DatasetName
    from .planning.plan import Gap, Interval, ReadPlan
    from .planning.progress import MarkStore
    from .reading.decode import Decoder
    from .reading.loop import SplitReader
    from .reading.staging import Staging
    from .reading.stats import SplitSummary
    from .records import JsonObject
    from .splits import LagUnit, PositionText, Split

Mode = Literal["interval", "incremental", "bounded"]
# A source's client properties: its connection's settings as its clients take them (Kafka's
# dotted names, Kinesis's region and endpoint, a registry's URL), plus what a run adds (an
# MSK IAM token callback); ``config.secrets`` keeps the secret ones apart. A value is text as
# connections and the YAML give it, or a number, flag or None a source's own settings add
# (an AWS session's duration, a role's external id not set).
PropertyValue = str | int | float | bool | None
Properties = dict[str, PropertyValue]
OnDataLoss = Literal["fail", "skip"]  # records gone before a run read them: fail, or skip
ON_DATA_LOSS: tuple[OnDataLoss, ...] = ("fail", "skip")

# kind → "module:Class"; imported on first use, so a Kafka run never loads boto3.
SOURCES: dict[str, str] = {
    "kafka": "streamslice.kafka.source:KafkaSource",
    "kinesis": "streamslice.kinesis.source:KinesisSource",
    "files": "streamslice.files.source:FileSource",
}


def source_class(kind: str) -> type[Source[Any]]:
    cls: type[Source[Any]] = registered_class(SOURCES, kind, "source")
    return cls


def read_split(kind: str, data: JsonObject) -> Split[Any]:
    """One split of a ``kind`` source from a plan's JSON."""
    from .errors import PlanError
    if kind not in SOURCES:
        raise PlanError(f"plan for source {kind!r}, which this streamslice does not have "
                        f"(sources: {', '.join(SOURCES)})")
    split: Split[Any] = source_class(kind).serializer().from_dict(data)
    return split


def read_plan(data: JsonObject | str | bytes) -> ReadPlan[Split[Any]]:
    """A ReadPlan from its JSON (text or parsed), each split read by the plan's own source;
    a plan of another version is migrated or refused (``planning.plan.upgrade``)."""
    from .planning.plan import ReadPlan
    if isinstance(data, (str, bytes)):
        return ReadPlan.from_json(data, read_split)
    return ReadPlan.from_dict(data, read_split)


def position_text(kind: str | None, position: Any) -> PositionText:
    """A position of a ``kind`` source for people (``splits.PositionText``: short + full).
    For pages that know only the source's kind (from a plan's ``source`` or a DAG's tags);
    an unknown kind or a value its source does not recognise is shown as it is."""
    from .splits import NO_POSITION, PositionText
    if position is None:
        return NO_POSITION
    if kind in SOURCES:
        try:
            return source_class(kind).serializer().position_text(position)
        except (ValueError, KeyError, TypeError):
            pass
    return PositionText.plain(position if isinstance(position, str) else
                              json.dumps(position, sort_keys=True))


def split_noun(kind: str | None) -> tuple[str, str]:
    """What people call a ``kind`` source's split, singular and plural (``shard``)."""
    return source_class(kind).split_noun if kind in SOURCES else ("partition", "partitions")


def lag_unit(kind: str | None) -> LagUnit | None:
    """The unit a ``kind`` source's lag is measured in (``records`` or ``ms``)."""
    return source_class(kind).lag_unit if kind in SOURCES else None


@dataclass
class PlanRequest:
    """What one run asks of its source."""

    mode: Mode
    properties: Properties
    now_ms: int
    interval: Interval | None = None
    checkpoint: Checkpoint | None = None
    # Where idle partitions closed intervals (``planning.progress``); interval runs only
    marks: MarkStore | None = None


@dataclass
class SourcePlan(Generic[SplitT]):
    """What a source's planner returns, the same shape for every source."""

    splits: Sequence[SplitT]
    gaps: list[Gap] = field(default_factory=list)
    next_positions: Positions = field(default_factory=dict)  # {} when readers decide
    info: dict[str, Any] = field(default_factory=dict)  # goes into the plan: no secrets


@dataclass
class ReadRequest:
    """What an executor has for one split: the plan, client properties and read options."""

    plan: ReadPlan[Any]
    properties: Properties
    decoder: Decoder
    staging: Staging | None = None
    fault: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResetTarget:
    """Where a reset points the checkpoint: positions per split key, and source state."""

    positions: Positions
    source_state: dict[str, Any] = field(default_factory=dict)
    # What the reset does beyond what the user named (Kinesis: the shards it does not name
    # start over from the trim horizon), for the user to confirm before it is done.
    confirm: str | None = None


@dataclass(frozen=True)
class LifecycleTask:
    """A task a source needs around the read (``HasLifecycleTasks``: Kinesis EFO
    registration). ``callable`` is the dotted path of a core function ``(source,
    LifecycleRun) -> JSON`` (``call``); the Airflow glue runs it as a setup or teardown task,
    and a setup's result reaches ``read_options``."""

    task_id: str
    callable: str
    role: Literal["before_setup", "setup", "teardown"]
    doc: str


@dataclass(frozen=True)
class LifecycleRun:
    """What a lifecycle task gets besides its source: the run, and the client properties
    (resolved from the source's connection only when called)."""

    run_id: str
    properties: Callable[[], Properties]


def call(dotted: str) -> Callable[..., Any]:
    """The function at ``package.module.function`` (or ``module:function``)."""
    fn: Callable[..., Any] = load(dotted)
    return fn


@dataclass(frozen=True)
class PageSection:
    """A part of a pipeline's page that only its source can fill (``HasPageSections``;
    Kinesis: the stream's EFO consumers): a titled table of plain text, or the error that
    kept it from being filled. Nothing secret goes in (no connection settings)."""

    title: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    error: str | None = None
    empty: str = "Nothing to show."
    actions: tuple[PageAction | None, ...] = ()  # per row, in the rows' order (or none)


@dataclass(frozen=True)
class PageAction:
    """A button on one row of a page section (Kinesis: deregister a leaked EFO consumer).
    Pressed and confirmed by a user who may run the DAG (what the source's lifecycle tasks do
    needs no more), the glue calls ``HasPageSections.page_action(name, target, …)``, which
    checks the target again: the page may be old, and the browser is not trusted."""

    name: str  # which of the source's actions
    target: str  # what it acts on, as the source will be handed it back
    label: str  # the button's text
    confirm: str  # one sentence: what pressing it does
    disabled: str | None = None  # why it cannot be pressed now


class Source(ABC, Generic[SplitT]):
    """One configured source (FLIP-27's ``Source``): parsed from the YAML block or a Spark
    read's options, described for the DAG's docs, and the factory of its roles. Instances are
    frozen dataclasses; ``SplitT`` is its split type (``splits.Split``)."""

    kind: ClassVar[str]
    option_prefix: ClassVar[str]  # client properties as Spark options: "kafka." / "aws."
    options: ClassVar[tuple[str, ...]]  # the source's own Spark option names
    lag_unit: ClassVar[LagUnit]  # what its splits' lag counts: records, or ms behind the tip
    split_noun: ClassVar[tuple[str, str]] = ("partition", "partitions")  # what people call one
    conn_id: str | None  # the Airflow connection it reads through (``Connected``), or None

    # -- configuration ----------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> Source[SplitT]:
        """The source's YAML block (``f``) → a validated source."""

    @classmethod
    @abstractmethod
    def from_options(cls, options: dict[str, str]) -> tuple[Source[SplitT], Properties]:
        """Spark data source options (lower-cased keys) → (source, client properties)."""

    @abstractmethod
    def client_properties(self, resolved: Properties | None = None) -> Properties:
        """Client properties: ``resolved`` (from a connection) overlaid by the YAML's own."""

    def extras(self) -> tuple[str, ...]:
        """The package extras its planner and readers need (``streamslice.config.extras``)."""
        return ()

    @abstractmethod
    def describe(self) -> str:
        """What is read, in a few words (topics, streams)."""

    @abstractmethod
    def describe_where(self) -> str:
        """Where it is read from (brokers, region)."""

    @abstractmethod
    def describe_bounds(self, mode: str) -> str:
        """How a run's start and stop are chosen, for the DAG docs."""

    @abstractmethod
    def describe_start(self) -> str:
        """Where a first run starts."""

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        """Options for the readers, from the config and the setup tasks' results."""
        return {}

    def asset_extra(self) -> dict[str, str | int | float | bool | None]:
        """Facts about the source for the output asset's extra, which downstream DAGs and the
        page read (no client settings, no secrets)."""
        return {}

    # -- the roles --------------------------------------------------------------------------
    @abstractmethod
    def planner(self) -> Planner[SplitT]:
        """Its planner, on the driver (FLIP-27's ``createEnumerator``)."""

    @classmethod
    @abstractmethod
    def readers(cls) -> ReaderFactory[SplitT]:
        """Its reader factory (``createReader``): needs no configuration, only the plan."""

    @classmethod
    @abstractmethod
    def serializer(cls) -> SplitSerializer[SplitT]:
        """Its split serializer (``getSplitSerializer``)."""


class Planner(ABC, Generic[SplitT]):
    """FLIP-27's ``SplitEnumerator``, on the driver: resolves a configured source's start and
    stop into concrete splits for one run."""

    @abstractmethod
    def split_keys(self, properties: Properties) -> list[str]:
        """Every partition / shard this source reads now, as split keys."""

    @abstractmethod
    def plan(self, request: PlanRequest) -> SourcePlan[SplitT]:
        """Resolve start and stop into concrete splits for one run."""

    @abstractmethod
    def reset_positions(self, to: Any, properties: Properties) -> ResetTarget:
        """A reset target (as the CLI takes it) → the checkpoint it means."""


class ReaderFactory(ABC, Generic[SplitT]):
    """FLIP-27's ``createReader``, for Spark executors and the commit, which have only the
    plan: the readers of a split, the records they produce, and what their reports mean."""

    # The dead letters' columns that hold a record's raw bytes (a DataFrame read's
    # corrupt-record column holds them, ``reading.malformed``)
    raw_columns: ClassVar[tuple[str, ...]] = ("value",)
    # (columns naming a split key, position column to range-check or None), for the commit
    verify_columns: ClassVar[tuple[tuple[str, ...], str | None]]

    @abstractmethod
    def record_schema(self, decoder: Decoder, plan: ReadPlan[SplitT]) -> pa.Schema:
        """The Arrow schema of the records this source's readers produce."""

    @abstractmethod
    def open_reader(self, split: SplitT, request: ReadRequest) -> SplitReader[SplitT]:
        """A reader for one split."""

    def spark_read_options(self, options: dict[str, str]) -> dict[str, Any]:
        """Options for the readers from a Spark read's own options (lower-cased keys), also
        when the read is given a plan."""
        return {}

    def resolve_splits(self, splits: list[SplitT],
                       properties: Callable[[], Properties]) -> list[SplitT]:
        """Called on Spark's driver when it plans a DataFrame read's input partitions: the
        splits with what the source resolves once per read bound (Kafka: a Spark read's
        timestamps) and checked, so a bad range fails there, as one line, before any task.
        ``properties()`` resolves the client properties, only if they are needed."""
        return splits

    def next_positions(self, plan: ReadPlan[SplitT], summaries: dict[int, SplitSummary],
                       base: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint positions after ``plan`` committed. By default the plan knows them;
        a source whose readers decide (Kinesis) overrides this."""
        merged = dict(base)
        merged.update(plan.next_positions)
        return merged

    def source_state(self, plan: ReadPlan[SplitT]) -> dict[str, Any]:
        """What the checkpoint keeps of the source beside its positions, set by the first
        commit that has it and kept after (Kinesis: the initial position its new shards start
        at). None by default."""
        return {}

    @abstractmethod
    def lineage_dataset(self, plan: ReadPlan[SplitT], split: SplitT) -> DatasetName:
        """The dataset ``split`` reads, named as OpenLineage names datasets
        (``streamslice.monitoring.lineage``): Kafka's topic, Kinesis' stream, a folder of files."""


class SplitSerializer(ABC, Generic[SplitT]):
    """A source's splits to and from the plan's JSON (Flink's ``SimpleVersionedSerializer``;
    the plan's ``version`` versions them, ``planning.plan.MIGRATIONS``), and its positions
    (a split's start or end, a checkpoint value, a reader's first or last position) as people
    read them."""

    @abstractmethod
    def from_dict(self, data: JsonObject) -> SplitT:
        """A split as the plan's JSON holds it → the split object."""

    def to_dict(self, split: SplitT) -> JsonObject:
        return split.to_dict()

    def position_text(self, position: Any) -> PositionText:
        """``short`` for a table cell, ``full`` to copy."""
        from .splits import NO_POSITION, PositionText
        if position is None:
            return NO_POSITION
        return PositionText.plain(str(position))


# -- capabilities: what only some sources have, asked with isinstance -------------------------
@runtime_checkable
class Connected(Protocol):
    """A source that reaches its service through an Airflow connection (``conn_id``)."""

    conn_type: str  # the Airflow connection type ``conn_id`` names
    # The Airflow glue's function that turns such a connection into client properties
    # ("module.function", called with conn_id and ``connection_hints()``).
    connection_hook: str
    # Secret client properties a Spark runtime with an identity of its own (a Spark Connect
    # server, EMR Serverless) replaces by that identity; other secrets cannot go there.
    ambient_secrets: tuple[str, ...]

    def connection_hints(self) -> dict[str, str | None]:
        """Keyword arguments for ``connection_hook`` besides the conn_id (e.g. a region)."""
        ...


@runtime_checkable
class HasLifecycleTasks(Protocol):
    """A source that needs tasks around the read (Kinesis: EFO consumers)."""

    def lifecycle_tasks(self) -> list[LifecycleTask]:
        ...


@runtime_checkable
class HasPageSections(Protocol):
    """A source with parts of the pipeline's page only it can fill."""

    def page_sections(self, properties: Callable[[], Properties],
                      running: frozenset[str] = frozenset()) -> list[PageSection]:
        """Asked for when the page is shown. ``properties()`` resolves the client properties,
        only if they are needed; ``running`` holds the ids of the DAG's runs queued or
        running (what they use is not offered for removal)."""
        ...

    def page_action(self, name: str, target: str, properties: Callable[[], Properties],
                    running: frozenset[str] = frozenset()) -> str:
        """Do a section's action (``PageAction``) on ``target`` once it is checked to be
        allowed now; returns what was done, in one sentence. Refusals raise
        ``StreamsliceError`` saying why."""
        ...


@runtime_checkable
class HasCliCommands(Protocol):
    """A source with ``streamslice`` commands of its own (Kinesis: ``efo list``, ``efo
    sweep``), asked of its class: the CLI finds them, the source never imports the CLI."""

    def add_cli_commands(self, commands: argparse._SubParsersAction[Any],
                         kit: CommandKit) -> None:
        """Each parser sets ``run`` (a function of the parsed args) as a default; raising a
        StreamsliceError prints one line and exits 1."""
        ...


@runtime_checkable
class CommitListener(Protocol):
    """A source that reports a committed checkpoint elsewhere (Kafka: a consumer group)."""

    def after_commit(self, positions: Positions,
                     properties: Callable[[], Properties]) -> None:
        """After the checkpoint advanced; reporting only, it never fails the run.
        ``properties()`` resolves the client properties, only if they are needed."""
        ...


@dataclass(frozen=True)
class CommandKit:
    """What the ``streamslice`` CLI hands a source's own commands."""

    emit: Callable[[argparse.Namespace, Any, str], None]  # --json: the data, else the text
    table: Callable[[Sequence[str], Sequence[Sequence[Any]]], str]
    # The pipelines the command sees (``--dir`` …); ConfigError when there is no folder
    pipelines: Callable[[argparse.Namespace], list[PipelineConfig]]
    # A source's client properties through its connection, as the tasks resolve them
    source_properties: Callable[[Source[Any]], Properties]
    # Client properties from an AWS connection: (conn_id, region, option it came from)
    aws_properties: Callable[[str, str | None, str], Properties]


def lifecycle_tasks(source: Source[Any]) -> list[LifecycleTask]:
    """The tasks ``source`` needs around the read (none for most)."""
    return source.lifecycle_tasks() if isinstance(source, HasLifecycleTasks) else []


def ambient_secrets(source: Source[Any]) -> tuple[str, ...]:
    return source.ambient_secrets if isinstance(source, Connected) else ()
