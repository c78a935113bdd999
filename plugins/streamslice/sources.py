"""The Source contract (FLIP-27's split enumerator and reader factory, as one class per source)
and the registry of sources.

A source package (``kafka/``, ``kinesis/``) implements ``Source`` once and is registered in
``SOURCES`` by one line. Nothing outside the source packages branches on the source kind: the
config reads the block named after a registered kind, the planner calls ``plan``, Spark
executors call ``open_reader`` with the split the plan holds, the commit verifies with
``verify_columns`` and advances with ``next_positions``, the CLI resets with
``reset_positions``.
"""
from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal

from .splits import SplitT

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    import pyarrow as pa

    from .commit.checkpoint import Checkpoint
    from .config.fields import Fields
    from .lineage import DatasetName
    from .planning.plan import Interval, ReadPlan
    from .reading.decode import Decoder
    from .reading.loop import SplitReader
    from .reading.staging import Staging
    from .splits import LagUnit, PositionText, Split

Mode = Literal["interval", "incremental", "bounded"]

# kind → "module:Class"; imported on first use, so a Kafka run never loads boto3.
SOURCES: dict[str, str] = {
    "kafka": "streamslice.kafka.source:KafkaSource",
    "kinesis": "streamslice.kinesis.source:KinesisSource",
    "files": "streamslice.files.source:FileSource",
}


def source_class(kind: str) -> type[Source[Any]]:
    try:
        module, _, name = SOURCES[kind].partition(":")
    except KeyError:
        raise ValueError(f"unknown source {kind!r} (known: {', '.join(SOURCES)})") from None
    cls: type[Source[Any]] = getattr(importlib.import_module(module), name)
    return cls


def read_split(kind: str, data: dict[str, Any]) -> Split[Any]:
    """One split of a ``kind`` source from a plan's JSON."""
    from .errors import PlanError
    if kind not in SOURCES:
        raise PlanError(f"plan for source {kind!r}, which this streamslice does not have "
                        f"(sources: {', '.join(SOURCES)})")
    split: Split[Any] = source_class(kind).split_from_dict(data)
    return split


def read_plan(data: dict[str, Any] | str | bytes) -> ReadPlan[Split[Any]]:
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
            return source_class(kind).position_text(position)
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
    properties: dict[str, Any]
    now_ms: int
    interval: Interval | None = None
    checkpoint: Checkpoint | None = None


@dataclass
class SourcePlan:
    """What a source's planner returns, the same shape for every source."""

    splits: Sequence[Split[Any]]
    gaps: list[dict[str, Any]] = field(default_factory=list)
    next_positions: dict[str, Any] = field(default_factory=dict)  # {} when readers decide
    info: dict[str, Any] = field(default_factory=dict)  # goes into the plan: no secrets


@dataclass
class ReadRequest:
    """What an executor has for one split: the plan, client properties and read options."""

    plan: ReadPlan[Any]
    properties: dict[str, Any]
    decoder: Decoder
    staging: Staging | None = None
    fault: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResetTarget:
    """Where a reset points the checkpoint: positions per split key, and source state."""

    positions: dict[str, Any]
    source_state: dict[str, Any] = field(default_factory=dict)
    # What the reset does beyond what the user named (Kinesis: the shards it does not name
    # start over from the trim horizon), for the user to confirm before it is done.
    confirm: str | None = None


@dataclass(frozen=True)
class LifecycleTask:
    """A task a source needs around the read (Kinesis EFO registration). ``callable`` is the
    dotted path of a core function ``(source, LifecycleRun) -> JSON`` (``call``); the Airflow
    glue runs it as a setup or teardown task, and a setup's result reaches ``read_options``."""

    task_id: str
    callable: str
    role: Literal["before_setup", "setup", "teardown"]
    doc: str


@dataclass(frozen=True)
class LifecycleRun:
    """What a lifecycle task gets besides its source: the run, and the client properties
    (resolved from the source's connection only when called)."""

    run_id: str
    properties: Callable[[], dict[str, Any]]


def call(dotted: str) -> Callable[..., Any]:
    """The function at ``package.module.function``."""
    module, _, name = dotted.rpartition(".")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


@dataclass(frozen=True)
class PageSection:
    """A part of a pipeline's page that only its source can fill (Kinesis: the stream's EFO
    consumers): a titled table of plain text, or the error that kept it from being filled.
    Nothing secret goes in (no connection settings)."""

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
    needs no more), the glue calls ``Source.page_action(name, target, …)``, which checks the
    target again: the page may be old, and the browser is not trusted."""

    name: str  # which of the source's actions
    target: str  # what it acts on, as the source will be handed it back
    label: str  # the button's text
    confirm: str  # one sentence: what pressing it does
    disabled: str | None = None  # why it cannot be pressed now


class Source(ABC, Generic[SplitT]):
    """One configured source. Instances are frozen dataclasses parsed from the YAML block;
    ``SplitT`` is its split type (``splits.Split``)."""

    kind: ClassVar[str]
    option_prefix: ClassVar[str]  # client properties as Spark options: "kafka." / "aws."
    options: ClassVar[tuple[str, ...]]  # the source's own Spark option names
    conn_type: ClassVar[str | None] = None  # the Airflow connection type ``conn_id`` names
    # The Airflow glue's function that turns such a connection into client properties
    # ("module.function", called with conn_id and ``connection_hints()``), None without one.
    connection_hook: ClassVar[str | None] = None
    lag_unit: ClassVar[LagUnit]  # what its splits' lag counts: records, or ms behind the tip
    # Secret client properties a Spark runtime with an identity of its own (a Spark Connect
    # server, EMR Serverless) replaces by that identity; other secrets cannot go there.
    ambient_secrets: ClassVar[tuple[str, ...]] = ()
    split_noun: ClassVar[tuple[str, str]] = ("partition", "partitions")  # what people call one
    # The dead letters' columns that hold a record's raw bytes (a DataFrame read's
    # corrupt-record column holds them, ``reading.malformed``)
    raw_columns: ClassVar[tuple[str, ...]] = ("value",)
    conn_id: str | None

    # -- configuration ----------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def parse(cls, f: Fields, mode: str, pipeline: str) -> Source:
        """The source's YAML block (``f``) → a validated source."""

    @classmethod
    @abstractmethod
    def from_options(cls, options: dict[str, str]) -> tuple[Source, dict[str, Any]]:
        """Spark data source options (lower-cased keys) → (source, client properties)."""

    @abstractmethod
    def client_properties(self, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        """Client properties: ``resolved`` (from a connection) overlaid by the YAML's own."""

    def extras(self) -> tuple[str, ...]:
        """The package extras its planner and readers need (``streamslice.extras``)."""
        return ()

    def connection_hints(self) -> dict[str, Any]:
        """Keyword arguments for ``connection_hook`` besides the conn_id (e.g. a region)."""
        return {}

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

    # -- planning (driver) -------------------------------------------------------------------
    @abstractmethod
    def split_keys(self, properties: dict[str, Any]) -> list[str]:
        """Every partition / shard this source reads now, as split keys."""

    @abstractmethod
    def plan(self, request: PlanRequest) -> SourcePlan:
        """Resolve start and stop into concrete splits for one run."""

    @abstractmethod
    def reset_positions(self, to: Any, properties: dict[str, Any]) -> ResetTarget:
        """A reset target (as the CLI takes it) → the checkpoint it means."""

    def lifecycle_tasks(self) -> list[LifecycleTask]:
        return []

    # -- what the glue shows and offers --------------------------------------------------------
    def asset_extra(self) -> dict[str, Any]:
        """Facts about the source for the output asset's extra, which downstream DAGs and the
        page read (no client settings, no secrets)."""
        return {}

    def page_sections(self, properties: Callable[[], dict[str, Any]],
                      running: frozenset[str] = frozenset()) -> list[PageSection]:
        """Source-specific parts of the pipeline's page, asked for when the page is shown.
        ``properties()`` resolves the client properties, only if they are needed; ``running``
        holds the ids of the DAG's runs queued or running (what they use is not offered for
        removal)."""
        return []

    def page_action(self, name: str, target: str, properties: Callable[[], dict[str, Any]],
                    running: frozenset[str] = frozenset()) -> str:
        """Do a page section's action (``PageAction``) on ``target`` once it is checked to be
        allowed now; returns what was done, in one sentence. Refusals raise
        ``StreamsliceError`` saying why."""
        from .errors import StreamsliceError
        raise StreamsliceError(f"a {self.kind} pipeline's page has no action {name!r}")

    @classmethod
    def add_cli_commands(cls, commands: argparse._SubParsersAction[Any]) -> None:
        """Source-specific ``streamslice`` commands (Kinesis: ``efo list``, ``efo sweep``).
        Each parser sets ``run`` (a function of the parsed args) as a default; raising a
        StreamsliceError prints one line and exits 1."""

    def read_options(self, setup_results: dict[str, Any]) -> dict[str, Any]:
        """Options for the readers, from the config and the setup tasks' results."""
        return {}

    @classmethod
    def spark_read_options(cls, options: dict[str, str]) -> dict[str, Any]:
        """Options for the readers from a Spark read's own options (lower-cased keys), also
        when the read is given a plan."""
        return {}

    def after_commit(self, positions: dict[str, Any],  # noqa: B027
                     properties: Callable[[], dict[str, Any]]) -> None:
        """Reporting after the checkpoint advanced (e.g. a consumer-group mirror).
        ``properties()`` resolves the client properties, only if they are needed."""

    @classmethod
    def resolve_splits(cls, splits: list[SplitT],
                       properties: Callable[[], dict[str, Any]]) -> list[SplitT]:
        """Called on Spark's driver when it plans a DataFrame read's input partitions: the
        splits with what the source resolves once per read bound (Kafka: a Spark read's
        timestamps) and checked, so a bad range fails there, as one line, before any task.
        ``properties()`` resolves the client properties, only if they are needed."""
        return splits

    # -- reading (executors: these only get the plan) --------------------------------------
    @classmethod
    @abstractmethod
    def split_from_dict(cls, data: dict[str, Any]) -> SplitT:
        """A split as the plan's JSON holds it → the split object."""

    @classmethod
    @abstractmethod
    def record_schema(cls, decoder: Decoder, plan: ReadPlan[SplitT]) -> pa.Schema:
        """The Arrow schema of the records this source's readers produce."""

    @classmethod
    @abstractmethod
    def open_reader(cls, split: SplitT, request: ReadRequest) -> SplitReader[SplitT]:
        """A reader for one split."""

    # -- commit ---------------------------------------------------------------------------
    verify_columns: ClassVar[tuple[tuple[str, ...], str | None]]
    """(columns naming a split key, position column to range-check or None)."""

    @classmethod
    def next_positions(cls, plan: ReadPlan[SplitT], summaries: dict[int, dict[str, Any]],
                       base: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint positions after ``plan`` committed. By default the plan knows them;
        a source whose readers decide (Kinesis) overrides this."""
        merged = dict(base)
        merged.update(plan.next_positions)
        return merged

    # -- lineage --------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def lineage_dataset(cls, plan: ReadPlan[SplitT], split: SplitT) -> DatasetName:
        """The dataset ``split`` reads, named as OpenLineage names datasets
        (``streamslice.lineage``): Kafka's topic, Kinesis' stream, a folder of files."""

    @classmethod
    def position_text(cls, position: Any) -> PositionText:
        """A position of this source (a split's start or end, a checkpoint value, a reader's
        first or last position) for people: ``short`` for a table cell, ``full`` to copy."""
        from .splits import NO_POSITION, PositionText
        if position is None:
            return NO_POSITION
        return PositionText.plain(str(position))
