"""What a reader saw on one split: the summary the commit step verifies and the manifest shows.

``lag`` starts as the split's own (records behind at plan time); a reader that measures it
(Kinesis' MillisBehindLatest) replaces it through ``note``. ``lag_unit`` says which it is.

The summary crosses a process (a Spark executor writes it, the commit task reads it) and is
kept in every manifest, so it is a versioned record (``streamslice.records``). A source's own
figures (Kinesis: ``finished``, ``last_seq``, …) are its ``extra``, written beside the common
ones as they always were."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow.compute as pc

from ..records import RecordKind, Versioned, decode
from ..splits import LAG_UNITS, LagUnit  # noqa: TC001 - msgspec reads the annotation

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from ..records import JsonObject
    from ..splits import Split


@dataclass
class SplitSummary(Versioned):
    KIND: ClassVar[RecordKind] = RecordKind("split summary", 1)

    split: int  # the split's id in its plan
    key: str  # its partition or shard, as checkpoints name it
    start: Any  # the split's range, as the plan has it
    stop: Any
    scanned: int = 0  # records fetched
    records: int = 0  # records kept (decoded, inside the range)
    late: int = 0
    outside_interval: int = 0
    dead_letters: int = 0
    bytes: int = 0
    first: Any = None  # the first and last position scanned
    last: Any = None
    min_timestamp: int | None = None  # epoch ms of the records kept
    max_timestamp: int | None = None
    reached_stop: bool = False
    lag: int | None = None
    lag_unit: LagUnit = "records"
    early: int | None = None  # with an event-time field only (None: not counted)
    extra: dict[str, Any] = field(default_factory=dict)  # the source's own figures
    version: int = 1

    def to_dict(self) -> JsonObject:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        if self.early is None:
            del data["early"]
        return {**self.extra, **data}

    @classmethod
    def from_dict(cls, data: Any) -> SplitSummary:
        if isinstance(data, dict):
            data = _v1_lag_unit(data)
            known = {f.name for f in fields(cls)} - {"extra"}
            data = {**{k: v for k, v in data.items() if k in known},
                    "extra": {k: v for k, v in data.items() if k not in known}}
        return decode(cls, data)


def _v1_lag_unit(data: dict[str, Any]) -> dict[str, Any]:
    """Summaries written before ``lag_unit`` existed carried Kinesis' figure as
    ``millis_behind_latest``."""
    if data.get("lag_unit") in LAG_UNITS:
        return data
    if data.get("millis_behind_latest") is not None:
        return {**data, "lag": data["millis_behind_latest"], "lag_unit": "ms"}
    return {**data, "lag_unit": "records"}


class SplitStats:
    """A reader's running summary of its split."""

    def __init__(self, split: Split[Any]) -> None:
        self.split = split
        self.summary = SplitSummary(split=split.id, key=split.key, start=split.start,
                                    stop=split.end, lag=split.lag, lag_unit=split.lag_unit)

    def scanned(self, positions: Sequence[Any]) -> None:
        if not positions:
            return
        s = self.summary
        s.scanned += len(positions)
        if s.first is None:
            s.first = positions[0]
        s.last = positions[-1]

    def outside(self, n: int) -> None:
        self.summary.outside_interval += n

    def dead_letters(self, n: int) -> None:
        self.summary.dead_letters += n

    def kept(self, positions: Sequence[Any], timestamps_ms: pa.Array,
             late_mask: pa.Array | None, nbytes: int,
             early_mask: pa.Array | None = None) -> None:
        """``early_mask``: with an event-time field (whose summaries then count ``early``)."""
        s, n = self.summary, len(positions)
        if early_mask is not None:
            s.early = (s.early or 0) + (pc.sum(early_mask).as_py() or 0)
        if not n:
            return
        s.records += n
        s.bytes += nbytes
        if late_mask is not None:
            s.late += pc.sum(late_mask).as_py() or 0
        lo, hi = pc.min_max(timestamps_ms).values()
        lo, hi = lo.as_py(), hi.as_py()
        if s.min_timestamp is None or lo < s.min_timestamp:
            s.min_timestamp = lo
        if s.max_timestamp is None or hi > s.max_timestamp:
            s.max_timestamp = hi

    def note(self, **figures: Any) -> None:
        """Figures the reader knows at the end: a common one (``lag``, the bound ``start``)
        replaces its value, a source's own goes to ``extra``."""
        known = {f.name for f in fields(SplitSummary)} - {"extra", "version"}
        for name, value in figures.items():
            if name in known:
                setattr(self.summary, name, value)
            else:
                self.summary.extra[name] = value

    def reached_stop(self) -> None:
        self.summary.reached_stop = True
