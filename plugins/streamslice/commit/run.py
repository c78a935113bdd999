"""One run as one object: ``Run`` takes a run through the states of ``commit.states`` (planned →
read → verified → published → advanced; leader and follower where runs read ahead), each step
a method, guarded by what is persisted and safe to repeat. The task layouts drive it: three
tasks call ``plan``, ``read`` and ``commit`` one each; the combined task calls ``combined``,
which resumes from whatever state an earlier try left. The host (Airflow: ``airflow.tasks``)
supplies what only it can do (plan against its connections, run the read job, report to its
UI) through ``Host``; the run's own task state and the pipeline's claims are protocols too."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CommitError, RecordError, StreamsliceError, faults
from ..planning.planner import partition_name
from ..reading.sink import direct_codec
from ..reading.staging import Staging
from ..sources import read_plan
from .manifest import plan_id
from .protocol import attempt_name, staging_for
from .states import PLAN, STAGED, Persisted, Staged, State, state_of

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..planning.plan import Interval, ReadPlan
    from ..reading.ahead import ReadAhead
    from .checkpoint import Checkpoint
    from .lifecycle import RunCycle
    from .manifest import Manifest

log = logging.getLogger("streamslice")
Ahead = tuple["ReadPlan[Any]", str]  # a queued run's plan, and the staging area it is read into


class TaskState(Protocol):
    """The run's task's own state (Airflow: the task state store): kept across its tries."""

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...

    def delete(self, key: str) -> None: ...


class ClaimBook(Protocol):
    """Read ahead's claims of one pipeline (``reading.ahead``), seen from one run."""

    def wait(self, partition: str) -> ReadAhead | None: ...

    def claim(self, after: Interval) -> list[tuple[str, Interval]]: ...

    def complete(self, partition: str, plan: ReadPlan[Any], staging: str) -> None: ...

    def drop(self, partition: str) -> None: ...


class Host(Protocol):
    """What the run's host does for it."""

    def interval(self) -> Interval | None:
        """The run's interval (None where the mode has none)."""

    def wait_closed(self, interval: Interval) -> None:
        """Return once ``interval`` may be read (Airflow: reschedule the task until then)."""

    def new_plan(self, interval: Interval | None, checkpoint: Checkpoint | None,
                 run_id: str) -> ReadPlan[Any]: ...

    def read(self, plan: ReadPlan[Any], staging: str, ahead: Sequence[Ahead]) -> None:
        """Run the read job: ``plan`` into ``staging``, and each of ``ahead`` into its own."""

    def connect(self, plan: ReadPlan[Any]) -> None:
        """Fill in what the plan's output leaves to the host's connections."""

    def show(self, plan: ReadPlan[Any]) -> None:
        """The plan, where the host's UI looks for a run's plan."""

    def report(self, **facts: Any) -> None:
        """What the run did so far (plan, staging, manifest), for lineage."""

    def timed(self, step: str, seconds: float) -> None: ...

    def committed(self, plan: ReadPlan[Any], manifest: Manifest, checkpoint: Checkpoint,
                  seconds: float) -> None:
        """After the checkpoint advanced: listeners, alerts, the asset event, metrics."""


@dataclass(frozen=True)
class Outcome:
    manifest: Manifest
    checkpoint: Checkpoint
    read_ahead: tuple[str, ...] = ()  # the queued runs' partitions this run read for them


def best_effort(call: Callable[[], object], what: str, why: str) -> None:
    """A write that exactly once does not depend on: a failure is logged, not raised."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - see above: only a read or a wait is at stake
        log.warning("Could not %s (%s); %s", what, exc, why)


@dataclass(frozen=True)
class Run:
    """One run's task, try ``attempt`` (``try3``): its cycle of commit guards, its own state,
    its host and, where it reads ahead, the pipeline's claims."""

    cycle: RunCycle
    kept: TaskState
    host: Host
    attempt: str
    claims: ClaimBook | None = None

    @property
    def run_id(self) -> str:
        return self.cycle.run_id

    def state(self, plan: ReadPlan[Any] | None = None) -> State:
        """Where the run stands, from what is persisted (``plan``: the saved plan read)."""
        if plan is None:
            plan = self.cycle.saved_plan(self.kept.get(PLAN))
        if plan is None:
            return "new"
        self.host.connect(plan)  # a catalog table is found through its connection
        return state_of(Persisted(plan_id(plan), self.staged_note(),
                                  self.cycle.published(plan), self.cycle.advanced(plan)))

    def plan(self) -> ReadPlan[Any]:
        """new → planned: the plan an earlier try saved while it holds, or a new one, saved
        before it is returned."""
        started = time.monotonic()
        saved = self.kept.get(PLAN)
        reused = self.cycle.saved_plan(saved)
        if reused is not None:
            log.info("Reusing the plan saved by an earlier try of this run (version %d, "
                     "%d splits).", saved.get("version"), len(reused.splits))
            return reused
        interval = self.host.interval()
        if interval is not None:
            self.host.wait_closed(interval)
        plan = self.host.new_plan(interval, self.cycle.checkpoints.get(), self.run_id)
        log.info("Planned %d splits, %d records to %s; lag %s", len(plan.splits),
                 plan.total_records_hint, plan.partition, {s.key: s.lag for s in plan.splits})
        for gap in plan.gaps:
            log.warning("Data loss skipped (on_data_loss: skip): %s", gap)
        self.kept.set(PLAN, plan.to_dict())
        faults.check("plan")
        self.host.timed("plan", time.monotonic() - started)
        return plan

    def staging(self, plan: ReadPlan[Any]) -> str:
        """This try's staging area: a retry reads into an area of its own."""
        return staging_for(plan, attempt_name(self.run_id, self.attempt)).uri

    def read(self, plan: ReadPlan[Any]) -> tuple[str, tuple[str, ...]]:
        """planned → read, refused for a plan that no longer holds. As a leader (with
        claims), the claimed queued runs' intervals are read in the same job, each completed
        in its claim. This try's staging area, and the partitions read ahead."""
        self.cycle.check_holds(plan)  # a cleared read of a stale plan
        staging = self.staging(plan)
        self.host.report(plan=plan)
        ahead = self._lead(plan) if self.claims is not None and direct_codec(plan) else []
        started = time.monotonic()
        try:
            self.host.read(plan, staging, ahead)
        except StreamsliceError as exc:
            if not ahead:
                raise
            log.warning("Reading %d queued runs' intervals with this one failed (%s); reading "
                        "this run's alone, and each of them reads its own.", len(ahead), exc)
            self._drop([other.partition for other, _ in ahead])
            ahead = []
            self.host.read(plan, staging, ahead)
        took = time.monotonic() - started
        log.info("Read %d splits into %s in %.1fs", len(plan.splits), staging, took)
        for other, uri in ahead:
            assert self.claims is not None
            log.info("Read %s for run %s into %s", other.partition, other.run_id, uri)
            self.claims.complete(other.partition, other, uri)
        self.host.timed("read", took)
        self.host.report(staging=staging)
        return staging, tuple(other.partition for other, _ in ahead)

    def _lead(self, plan: ReadPlan[Any]) -> list[Ahead]:
        """leader: the claimed queued intervals' plans, each with its staging area."""
        assert plan.interval is not None and self.claims is not None
        started = time.monotonic()
        claimed = self.claims.claim(plan.interval)
        if not claimed:
            return []
        claimed_in = time.monotonic() - started
        checkpoint = self.cycle.checkpoints.get()
        ahead = []
        for run_id, interval in claimed:
            try:
                other = self.host.new_plan(interval, checkpoint, run_id)
            except StreamsliceError as exc:  # its own run plans it, and fails as it should
                log.warning("Not reading %s ahead: %s", partition_name("interval", interval),
                            exc)
                self.claims.drop(partition_name("interval", interval))
                continue
            ahead.append((other, staging_for(other, attempt_name(run_id, "ahead")).uri))
        log.info("Reading %d queued runs' intervals with this one (claimed in %.1fs, planned in "
                 "%.1fs).", len(ahead), claimed_in, time.monotonic() - started - claimed_in)
        return ahead

    def commit(self, plan: ReadPlan[Any], staging: str) -> Outcome:
        """read → verified → published → advanced (``RunCycle.commit``), then the host's
        after-commit work."""
        started = time.monotonic()
        self.host.connect(plan)
        self.host.report(plan=plan)
        manifest, checkpoint = self.cycle.commit(
            plan, Staging(staging, plan.output.auth if plan.output else None),
            now_ms=int(time.time() * 1000),
            published=lambda m: self.host.report(manifest=m))
        self.host.committed(plan, manifest, checkpoint, time.monotonic() - started)
        log.info("Committed %s: %d records, %d dead letters; checkpoint advanced.",
                 manifest.partition, manifest.records, manifest.dead_letters)
        return Outcome(manifest, checkpoint)

    def staged_note(self) -> Staged | None:
        raw = self.kept.get(STAGED)
        try:
            return Staged.from_dict(raw) if raw else None
        except RecordError as exc:  # another release's: this try reads again
            log.warning("Ignoring what an earlier try noted it read: %s", exc)
            return None

    def note(self, plan: ReadPlan[Any], staging: str) -> None:
        """read, noted: the staged note spares a retry the read."""
        best_effort(lambda: self.kept.set(STAGED, Staged(plan_id(plan), staging).to_dict()),
                    "note in the task's state what this try read",
                    "exactly once does not depend on it.")

    def commit_noted(self, plan: ReadPlan[Any], staging: str) -> Outcome:
        """Commit a noted read; the note goes once it is committed, or once it fails to
        commit (verification, or gone unpublished), so the next try reads the plan again."""
        try:
            outcome = self.commit(plan, staging)
        except CommitError:
            self.kept.delete(STAGED)
            raise
        self.host.report(staging=None)  # committed and cleaned up: the manifest has counts
        best_effort(lambda: self.kept.delete(STAGED), "drop the staged note",
                    "the next try finds its commit made.")
        return outcome

    def combined(self) -> Outcome:
        """The combined layout: follow a claim on this run's interval, or resume from the
        state the last try left (planned: read; read: commit the noted area)."""
        if self.claims is not None:
            interval = self.host.interval()
            assert interval is not None
            mine = partition_name("interval", interval)
            claim = self.claims.wait(mine)
            if claim is not None:
                if self.kept.get(PLAN) is None:
                    return self.adopt(claim, mine)
                self.claims.drop(mine)  # this run planned before: its own plan stands
        plan = self.plan()
        self.host.show(plan)
        staged = self.staged_note()
        if staged is not None and staged.plan_id == plan_id(plan):
            log.info("Committing what an earlier try of this task read into %s.",
                     staged.staging)
            return self.commit_noted(plan, staged.staging)
        staging, ahead = self.read(plan)
        self.note(plan, staging)
        outcome = self.commit_noted(plan, staging)
        return Outcome(outcome.manifest, outcome.checkpoint, ahead)

    def adopt(self, claim: ReadAhead, partition: str) -> Outcome:
        """follower: new → read with the plan another run's task read ahead for this run
        (saved as this run's own, so a retry commits or reads the same plan), then commit."""
        assert claim.plan is not None and claim.staging is not None
        plan = read_plan(claim.plan)
        self.kept.set(PLAN, claim.plan)
        self.host.show(plan)
        log.info("Committing what run %s read ahead for this run into %s.", claim.by,
                 claim.staging)
        self.note(plan, claim.staging)
        try:
            return self.commit_noted(plan, claim.staging)
        finally:
            self._drop([partition])

    def _drop(self, partitions: list[str]) -> None:
        claims = self.claims
        assert claims is not None
        for p in partitions:
            best_effort(partial(claims.drop, p), "drop a read-ahead claim",
                        "a claim left behind is dropped by the run it names.")
