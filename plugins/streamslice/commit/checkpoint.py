"""The checkpoint model: committed next positions per split key, how a commit advances it and
how a reset replaces it.

Where it is kept is the glue's business (Airflow asset state); this module only says what it is.
The whole checkpoint is one value written in one step, never read-modify-written key by key.
It outlives releases (asset state), so it is a versioned record (``streamslice.records``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import CommitError
from ..records import RecordKind, Versioned
from ..splits import Positions  # noqa: TC001 - msgspec reads the annotation

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..planning.plan import ReadPlan
    from ..sources import ResetTarget


@dataclass
class Checkpoint(Versioned):
    KIND: ClassVar[RecordKind] = RecordKind("checkpoint", 1)

    positions: Positions = field(default_factory=dict)  # split key → next position
    batch: int = 0  # committed incremental batches
    run_id: str | None = None
    committed_at: int | None = None  # epoch ms
    partition: str | None = None  # the output partition last published
    interval_end: int | None = None  # interval mode: the latest interval committed
    source_state: dict[str, Any] = field(default_factory=dict)  # e.g. Kinesis initial position
    version: int = 1

    @classmethod
    def saved(cls, data: Any) -> Checkpoint | None:
        """The checkpoint kept as ``data`` (asset state, a plan's base), None when none is."""
        return cls.from_dict(data) if data else None


def advance(current: Checkpoint | None, plan: ReadPlan[Any], *, now_ms: int,
            run_id: str | None = None, positions: Positions | None = None,
            keeps: Mapping[str, Any] | None = None) -> Checkpoint | None:
    """The checkpoint after ``plan`` is published, checked against what the plan started from.

    Incremental: the checkpoint must still be the one the plan read (one writer at a time).
    Interval: runs are independent; the checkpoint follows the latest interval committed.
    ``positions`` is the complete new mapping (``ReaderFactory.next_positions``); without it the
    plan's next positions are merged into the current ones. ``keeps`` is what the source keeps
    beside the positions (``ReaderFactory.source_state``), set where the checkpoint has none.
    """
    state = dict(current.source_state) if current and current.source_state else {}
    for key, value in (keeps or {}).items():
        state.setdefault(key, value)
    if plan.mode == "incremental":
        if advanced_by(plan, current, run_id):
            return current  # an earlier try of this run advanced it before a crash
        if not holds(plan, current, run_id):
            raise CommitError(f"{moved(plan, current)}; nothing was advanced. Re-run to plan "
                              "from the new checkpoint.")
        return Checkpoint(positions=_merge(current, plan, positions), batch=plan.batch or 0,
                          run_id=run_id, committed_at=now_ms, partition=plan.partition,
                          source_state=state)
    if plan.mode == "interval":
        assert plan.interval is not None
        if current and current.interval_end and current.interval_end > plan.interval.end:
            return current  # a backfill of an older interval leaves the newest in place
        return Checkpoint(positions=_merge(current, plan, positions),
                          batch=current.batch if current else 0, run_id=run_id,
                          committed_at=now_ms, partition=plan.partition,
                          interval_end=plan.interval.end, source_state=state)
    return current


def advanced_by(plan: ReadPlan[Any], current: Checkpoint | None, run_id: str | None) -> bool:
    """Whether ``current`` is the checkpoint ``plan``'s own commit by ``run_id`` left."""
    return (current is not None and run_id is not None and current.run_id == run_id
            and current.partition == plan.partition and current.batch == plan.batch)


def holds(plan: ReadPlan[Any], current: Checkpoint | None, run_id: str | None) -> bool:
    """Whether ``plan`` may still be read and published with the checkpoint at ``current``:
    an interval plan always (runs are independent); an incremental one while the checkpoint
    is the one it was planned from, or the one its own commit left (a retry after a crash)."""
    if plan.mode != "incremental" or advanced_by(plan, current, run_id):
        return True
    return _identity(current) == _identity(Checkpoint.saved(plan.base_checkpoint))


def moved(plan: ReadPlan[Any], current: Checkpoint | None) -> str:
    """Why an incremental ``plan`` no longer holds, in the operator's words."""
    base = Checkpoint.saved(plan.base_checkpoint)
    by = f" by run {current.run_id}" if current and current.run_id else ""
    return (f"the checkpoint moved since this run was planned (planned from batch "
            f"{base.batch if base else 0}, now at batch {current.batch if current else 0}"
            f"{by})")


def reset(current: Checkpoint | None, target: ResetTarget, note: str = "reset") -> Checkpoint:
    """The checkpoint after a reset. The batch counter carries on, so a replay publishes new
    batches instead of overwriting the ones already read."""
    return Checkpoint(positions=dict(target.positions), batch=current.batch if current else 0,
                      run_id=note, committed_at=int(time.time() * 1000),
                      partition=current.partition if current else None,
                      interval_end=current.interval_end if current else None,
                      source_state=dict(target.source_state))


def _merge(current: Checkpoint | None, plan: ReadPlan[Any],
           positions: Positions | None) -> Positions:
    if positions is not None:
        return dict(positions)
    merged = dict(current.positions) if current else {}
    merged.update(plan.next_positions)
    return merged


def _identity(cp: Checkpoint | None) -> tuple[int, Positions]:
    return (cp.batch, cp.positions) if cp else (0, {})
