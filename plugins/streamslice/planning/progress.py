"""Where a partition's progress closed an interval: the boundaries an idle partition had not
reached when a run needed them (Flink's idleness, made exact).

``b(T)``, the first position of a partition whose time is ``>= T`` (``planning.bounds``), is
stable once a record at or after ``T`` exists. Before that, a look-up falls back to the
partition's tip, which moves: a record appended later with a time before ``T`` lands after it,
and a run planned later would put ``b(T)`` past it. So the first run that needs such a
boundary *freezes* it: it records the mark ``(T, tip)`` (a partition "reached ``T`` at
``tip``") in a store every run of the pipeline shares, first writer wins, and every later
look-up uses it. The records appended after a mark with earlier times then fall in the next
interval's range, where the interval rule keeps them flagged late.

Marks keep ``b`` one non-decreasing function per partition, also for runs out of order: a
mark at ``T'`` says the partition reached every ``T <= T'`` by its position too, so

    b(T) = min(the log's b(T), the first mark at or after T)

(marks are non-decreasing in time themselves, so the first one is their minimum). A retry of
a saved plan needs no look-up at all. Marks of one partition live under one key (``key``);
two marks at the same position keep the later time (the earlier one says nothing more), and
marks below the partition's log start, whose records are gone, are dropped.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..errors import PlanError, RecordError
from ..records import RecordKind, Versioned

PREFIX = "progress/"
ATTEMPTS = 20  # compare-and-set attempts of one freeze before the plan fails


def key(split_key: str) -> str:
    """The store key of one partition's (shard's) marks."""
    return PREFIX + split_key


class MarkStore(Protocol):
    """Where marks live: JSON values by key, shared by every run of a pipeline."""

    def get(self, key: str) -> Any: ...

    def replace(self, key: str, old: Any, new: Any) -> bool:
        """Write ``new`` if the value is still ``old`` (``None``: no value yet); True when
        written."""
        ...

    def settle(self) -> None:
        """Wait until a write that raced this run's would be seen (nothing, where
        ``replace`` is atomic)."""
        ...


@dataclass
class Marks(Versioned):
    """One partition's marks: ``[time ms, position]`` pairs, ascending in both."""

    KIND: ClassVar[RecordKind] = RecordKind("progress marks", 1)

    marks: list[list[int]] = field(default_factory=list)
    version: int = 1

    def first_from(self, time: int) -> int | None:
        """The position of the first mark at or after ``time``, if any."""
        i = bisect.bisect_left([t for t, _ in self.marks], time)
        return self.marks[i][1] if i < len(self.marks) else None

    def with_mark(self, time: int, position: int, log_start: int) -> Marks:
        """These marks and ``(time, position)``, compacted (see above)."""
        pairs = sorted([*self.marks, [time, position]])
        kept: list[list[int]] = []
        for t, p in pairs:
            if kept and kept[-1][1] == p:
                kept[-1] = [t, p]
            else:
                kept.append([t, p])
        return Marks([m for m in kept if m[1] >= log_start])


@dataclass
class Progress:
    """The marks of one plan's partitions, read once and frozen into as the plan needs."""

    store: MarkStore
    _seen: dict[str, tuple[Any, Marks]] = field(default_factory=dict)
    _used: dict[tuple[str, int], int] = field(default_factory=dict)  # bounds taken from marks

    def bound(self, split_key: str, time: int, found: int | None, tip: int,
              log_start: int = 0) -> int:
        """``b(time)`` on a partition: ``found`` is the log's first position at or after
        ``time`` (None when there is none yet: ``tip`` then, frozen)."""
        marks = self._marks(split_key)
        later = marks.first_from(time)
        if later is None and found is not None:
            return found
        bound = min(found if found is not None else tip, later) if later is not None else \
            self._freeze(split_key, time, tip, log_start)
        if later is None or bound == later:
            self._used[(split_key, time)] = bound
        return bound

    def confirmed(self) -> bool:
        """Whether every bound this plan took from a mark (its own or another run's) is
        still the one recorded, after the store settled: False when a run's write replaced a
        mark meanwhile, and the plan must be made again."""
        if not self._used:
            return True
        self.store.settle()
        for split_key in {k for k, _ in self._used}:
            self._marks(split_key, fresh=True)
        return all(self._seen[k][1].first_from(t) == b for (k, t), b in self._used.items())

    def _marks(self, split_key: str, fresh: bool = False) -> Marks:
        if fresh or split_key not in self._seen:
            raw = self.store.get(key(split_key))
            try:
                marks = Marks.from_dict(raw) if raw is not None else Marks()
            except RecordError as exc:
                raise PlanError(f"{split_key}: the recorded progress marks cannot be read "
                                f"({exc})") from None
            self._seen[split_key] = (raw, marks)
        return self._seen[split_key][1]

    def _freeze(self, split_key: str, time: int, tip: int, log_start: int) -> int:
        for _ in range(ATTEMPTS):
            raw, marks = self._seen[split_key]
            later = marks.first_from(time)
            if later is not None:  # another run froze it (or a later time) first
                return min(tip, later)
            new = marks.with_mark(time, tip, log_start)
            if self.store.replace(key(split_key), raw, new.to_dict()):
                self._seen[split_key] = (new.to_dict(), new)
                return tip
            self._marks(split_key, fresh=True)
        raise PlanError(f"{split_key}: could not record where the partition's progress closed "
                        f"the interval ({ATTEMPTS} runs wrote its marks meanwhile); retry")
