"""A run's commit guards: ``RunCycle`` holds what the transitions of ``commit.states`` check
against what is persisted (the saved plan's base, the published plan id, the checkpoint), so
that a retry, a clear, a re-run or a kill at any point resumes or refuses, and never publishes
stale data over newer. ``commit.run.Run`` drives the transitions through it.

The guards:

- A saved plan is read and published only while it holds (``checkpoint.holds``): for an
  incremental plan, while the checkpoint is the one it was planned from (or its own commit's).
  ``saved_plan`` drops one that no longer does, so the run plans again; ``check_holds`` refuses
  to read one (a layout whose plan is another task's); ``commit`` checks again under the lease,
  before anything is published.
- One publisher per partition at a time: ``commit`` holds the partition's lease
  (``commit.lease``) from that check to the checkpoint's advance, so two commits of one
  interval never interleave, and an incremental run that lost the race finds the checkpoint
  moved instead of replacing the winner's batch.
- The checkpoint only moves forward: its read, ``advance`` and write hold the pipeline's
  checkpoint lease, so two runs never write one from the same read.
- A run removes its own staging areas, and another run's only where ``busy`` says that run is
  done (incremental runs go one at a time, so none is busy then).

The Airflow glue supplies where the checkpoint is kept and which runs are busy or alive.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import StalePlanError, faults
from ..sources import read_plan, source_class
from .checkpoint import Checkpoint, advance, advanced_by, holds, moved
from .lease import Lease
from .protocol import owner_of, publish_once, published_from, safe_name, target_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..planning.plan import ReadPlan
    from ..reading.staging import Staging
    from .manifest import Manifest

log = logging.getLogger("streamslice")
CHECKPOINT_LEASE = "checkpoint"


class CheckpointStore(Protocol):
    """Where the pipeline's checkpoint is kept (Airflow: the output asset's state)."""

    def get(self) -> Checkpoint | None: ...

    def put(self, checkpoint: Checkpoint) -> None: ...


def _always_busy(owner: str) -> bool:
    return True


@dataclass(frozen=True)
class RunCycle:
    """One run's transitions. ``busy(owner)``: whether the run whose staging areas are named
    ``owner`` (``protocol.owner_of``) may still read or commit them (unknown: busy).
    ``alive(run_id)``: whether a run holding a lease is still at work (None: ask no one; a
    lease of a dead holder is then broken by its age, or when its process is gone)."""

    run_id: str
    checkpoints: CheckpointStore
    busy: Callable[[str], bool] = field(default=_always_busy)
    alive: Callable[[str], bool] | None = None

    def saved_plan(self, saved: dict[str, Any] | None) -> ReadPlan[Any] | None:
        """planned, again: the plan an earlier try saved while it still holds; None when
        there is none, or the checkpoint moved since (the caller plans again and saves it)."""
        if not saved:
            return None
        plan: ReadPlan[Any] = read_plan(saved)
        current = self.checkpoints.get()
        if holds(plan, current, self.run_id):
            return plan
        log.warning("Not reusing the plan saved by an earlier try: %s. Planning again from "
                    "the current checkpoint.", moved(plan, current))
        return None

    def check_holds(self, plan: ReadPlan[Any]) -> None:
        """Before a read of ``plan``: refuse a plan that no longer holds."""
        current = self.checkpoints.get()
        if not holds(plan, current, self.run_id):
            raise StalePlanError(f"{moved(plan, current)}; this run's saved plan would replace "
                                 "newer data, so nothing was read or published. Clear the "
                                 "whole run (its plan task too) to plan again.")

    def commit(self, plan: ReadPlan[Any], staging: Staging, *, now_ms: int,
               published: Callable[[Manifest], None] | None = None
               ) -> tuple[Manifest, Checkpoint]:
        """verified → published → advanced, holding the partition's lease throughout
        (``published``: told the manifest as soon as the partition is in place)."""
        with Lease(target_of(plan), f"partition/{plan.partition}", self.run_id,
                   alive=self.alive):
            self.check_holds(plan)
            manifest = publish_once(plan, staging, run_id=self.run_id, now_ms=now_ms,
                                    removable=self.removable(plan))
            if published is not None:
                published(manifest)
            faults.check("after_publish")
            checkpoint = self.advance(plan, manifest, now_ms=now_ms)
        return manifest, checkpoint

    def advance(self, plan: ReadPlan[Any], manifest: Manifest, *, now_ms: int) -> Checkpoint:
        """advanced: the checkpoint after ``manifest``'s publish, read and written under the
        pipeline's checkpoint lease (found as it is when an earlier try advanced it)."""
        with Lease(target_of(plan), CHECKPOINT_LEASE, self.run_id, alive=self.alive):
            current = self.checkpoints.get()
            summaries = {s.split: s for s in manifest.splits}
            readers = source_class(plan.source).readers()
            positions = readers.next_positions(plan, summaries,
                                               current.positions if current else {})
            checkpoint = advance(current, plan, now_ms=now_ms, run_id=self.run_id,
                                 positions=positions, keeps=readers.source_state(plan))
            assert checkpoint is not None
            if checkpoint is not current:
                self.checkpoints.put(checkpoint)
        faults.check("after_checkpoint")
        return checkpoint

    def published(self, plan: ReadPlan[Any]) -> bool:
        """Whether ``plan``'s partition is published from this plan."""
        return published_from(plan) is not None

    def advanced(self, plan: ReadPlan[Any]) -> bool:
        """Whether the checkpoint needs nothing more from ``plan``: it is the one this run's
        commit of it left, or (an interval plan) it is at or past the plan's interval."""
        current = self.checkpoints.get()
        if plan.mode == "interval" and plan.interval is not None:
            end = current.interval_end if current is not None else None
            return end is not None and end >= plan.interval.end
        return advanced_by(plan, current, self.run_id)

    def removable(self, plan: ReadPlan[Any]) -> Callable[[str], bool]:
        """Which of the partition's staging areas this run's commit removes: its own; the
        others' once their run is done (``busy``); all of them for an incremental run (one
        run at a time)."""
        me = safe_name(self.run_id)

        def removable(area: str) -> bool:
            owner = owner_of(area)
            return plan.mode == "incremental" or owner == me or not self.busy(owner)
        return removable
