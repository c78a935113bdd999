"""The Split contract: what a source's split offers to code outside its package, and how
positions and lag are shown to people.

A split is one partition's (topic-partition, shard, file) bounded range for one run: FLIP-27's
``SourceSplit``, Spark's ``InputPartition``. Each source has its own split type (``kafka.split``,
``kinesis.split``, ``files.split``); the planner, the readers' shared loop, the commit, the CLI
and the UI use only the members below, so none of them needs to know which source it is.

Positions (where a split starts or ends, a checkpoint's next position, a reader's first and
last record) are plain JSON values whose meaning only their source knows: a Kafka offset
``4968``, a Kinesis checkpoint ``{"after": "4960…7012"}``, a file's line number. To show one,
ask the source (``SplitSerializer.position_text`` or, with only the source's kind at hand,
``sources.position_text(kind, value)``): it returns a ``PositionText`` with a ``short`` form
for a table cell (``after 4960…12``) and the ``full`` value for a tooltip or a copy button.
Lag comes with its unit (``LagUnit``): records behind the end of the partition at plan time,
or milliseconds behind the tip as the reader saw it (Kinesis' ``MillisBehindLatest``);
``lag_text`` renders either.

Pure core: no Airflow, no PySpark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from .reading.stats import SplitSummary
    from .records import JsonObject

LagUnit = Literal["records", "ms"]
# Where each split goes on: split key → its next position as JSON (an offset, a line number, a
# Kinesis position object): a checkpoint's, a plan's on commit, a reset's.
Positions = dict[str, Any]
LAG_UNITS: tuple[LagUnit, ...] = ("records", "ms")

# A split's position type: a Kafka offset or a line number (``int``), a Kinesis position
# (``dict``). Each source's split fixes it, so its start and end are typed in its package.
PositionT_co = TypeVar("PositionT_co", covariant=True)


@runtime_checkable
class Split(Protocol[PositionT_co]):
    """One partition's range in a ReadPlan. Splits are dataclasses; ``to_dict`` is what the
    plan's JSON holds and the source's split serializer reads back."""

    id: int  # unique in its plan: the Spark task, the staging file and the summary use it
    lag_unit: ClassVar[LagUnit]

    @property
    def key(self) -> str:
        """The partition it reads, as checkpoints and summaries name it (``topic:0``,
        ``stream:shardId-000000000001``). Sub-splits of one partition share a key."""

    @property
    def start(self) -> PositionT_co:
        """The first position read (a JSON value; ``SplitSerializer.position_text`` renders it)."""

    @property
    def end(self) -> PositionT_co:
        """Where the read stops (a JSON value): an exclusive offset, or a bound such as an
        arrival time when the readers find the last position themselves."""

    @property
    def lag(self) -> int | None:
        """How far behind the split started, in ``lag_unit``; None when only a reader can
        tell (the summary then carries the reader's figure)."""

    @property
    def size(self) -> int | None:
        """Records in the range when the plan knows them (offsets), else None."""

    @property
    def offset_range(self) -> tuple[int, int] | None:
        """``[first, end)`` in the source's position column when positions are integers the
        commit can range-check against the staged rows (``ReaderFactory.verify_columns``)."""

    def to_dict(self) -> JsonObject:
        """The split as the plan's JSON holds it."""


# One source's split type: what ``ReadPlan``, ``SplitReader`` and a source's roles are
# generic in, so a source's own code gets its own splits back without a cast.
SplitT = TypeVar("SplitT", bound="Split[Any]")


@dataclass(frozen=True)
class PositionText:
    """A position for people: ``short`` fits a table cell, ``full`` is the exact value (a
    tooltip, a copy button, ``--json``). Both say what kind of position it is."""

    short: str
    full: str
    bare: str = ""  # the value alone, as a user pastes it (``full`` less its label)

    def __str__(self) -> str:
        return self.full

    @property
    def to_copy(self) -> str:
        return self.bare or self.full

    @classmethod
    def plain(cls, text: str, keep: tuple[int, int] = (4, 2)) -> PositionText:
        """``text`` as the full form and, if it is long, elided in the middle."""
        return cls(elide(text, *keep), text)

    @classmethod
    def labelled(cls, label: str, value: str, keep: tuple[int, int] = (4, 2)) -> PositionText:
        """``label value`` with only the value elided: ``after 4968…12``."""
        return cls(f"{label} {elide(value, *keep)}", f"{label} {value}", value)


NO_POSITION = PositionText("-", "-")


def elide(text: str, head: int = 4, tail: int = 2) -> str:
    """``49680123456789012`` → ``4968…12``; text no longer than ``head + tail + 4`` stays."""
    if len(text) <= head + tail + 4:
        return text
    return f"{text[:head]}…{text[-tail:] if tail else ''}"


def lag_text(value: float | None, unit: str | None) -> str:
    """``1,234 records``, ``2.5 s behind``, ``3 min 20 s behind``; ``-`` when unknown."""
    if value is None:
        return "-"
    if unit == "ms":
        seconds = value / 1000
        if seconds < 60:
            return f"{seconds:,.1f} s behind" if seconds % 1 else f"{seconds:,.0f} s behind"
        minutes, rest = divmod(int(seconds), 60)
        if minutes < 60:
            return f"{minutes} min {rest} s behind" if rest else f"{minutes} min behind"
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes} min behind" if minutes else f"{hours} h behind"
    word = "record" if value == 1 else "records"
    return f"{value:,.0f} {word}"


def total_lag(summaries: list[SplitSummary]) -> dict[LagUnit, int | None]:
    """Per unit, the figure a run is judged by: records behind add up over partitions,
    milliseconds behind do not (the worst shard counts)."""
    values = [(s.lag, s.lag_unit) for s in summaries]
    out: dict[LagUnit, int | None] = {}
    for unit in LAG_UNITS:
        found = [v for v, u in values if u == unit and v is not None]
        out[unit] = (sum(found) if unit == "records" else max(found)) if found else None
    return out
