"""The run's states and transitions, named: planned → read → verified → published → advanced,
and read ahead's leader and follower. ``commit.run`` drives them; this module says what each
is, what it leaves behind, and which state a run is in from what is persisted alone, so a
crash in any state resumes (or fails clearly) from there. ``table()`` is the table in
docs/extending.md (a test keeps the two alike)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ..records import RecordKind, Versioned

State = Literal["new", "planned", "read", "verified", "published", "advanced"]
Role = Literal["alone", "leader", "follower"]
STATES: tuple[State, ...] = ("new", "planned", "read", "verified", "published", "advanced")
PLAN = "plan"  # task state: the run's saved plan
STAGED = "staged"  # task state: what a try read to the end, until a try commits it


@dataclass(frozen=True)
class Staged(Versioned):
    """The staged note: the plan ``plan_id``'s records are read to the end into ``staging``."""

    KIND: ClassVar[RecordKind] = RecordKind("staged note", 1)

    plan_id: str
    staging: str
    version: int = 1


@dataclass(frozen=True)
class Persisted:
    """What is kept of one run, read back: its saved plan's id, its staged note, whether the
    plan's partition is published (its manifest has the plan's id) and whether the checkpoint
    is the one that plan's commit by this run left."""

    plan_id: str | None = None
    staged: Staged | None = None
    published: bool = False
    advanced: bool = False


def state_of(kept: Persisted) -> State:
    """The state a run is in, from what is persisted (``verified`` persists nothing: a run
    that crashed there is ``read``)."""
    if kept.plan_id is None:
        return "new"
    if kept.advanced:
        return "advanced"
    if kept.published:
        return "published"
    if kept.staged is not None and kept.staged.plan_id == kept.plan_id:
        return "read"
    return "planned"


@dataclass(frozen=True)
class Transition:
    name: str  # the step: a ``commit.run.Run`` method (verify, publish, advance: ``Run.commit``)
    source: State
    target: State
    role: Role
    guard: str  # what persisted state lets it happen
    keeps: str  # what it persists
    resume: str  # what a crash after it leaves, and how the next try goes on


TRANSITIONS: tuple[Transition, ...] = (
    Transition("plan", "new", "planned", "alone",
               "the interval is closed; a saved plan is reused while it holds",
               "the saved plan (task state)",
               "the next try reuses the plan while it holds, plans again once the "
               "checkpoint moved"),
    Transition("read", "planned", "read", "alone",
               "the plan holds (the checkpoint it was planned from is still current)",
               "the try's staging area, then the staged note",
               "the next try commits the noted area; without a note it reads again into "
               "an area of its own"),
    Transition("read", "planned", "read", "leader",
               "claims taken under the claims' lease, on queued runs' closed intervals only",
               "a claim per queued interval, completed with its plan and staging area",
               "a claim not completed is dropped once its reader stopped or its lease ran "
               "out; its run reads for itself"),
    Transition("adopt", "new", "read", "follower",
               "a completed claim for this run, and no plan saved by an earlier try",
               "the claim's plan as the saved plan, and its staged note",
               "the next try commits the noted area, or reads the saved plan itself"),
    Transition("verify", "read", "verified", "alone",
               "every split reached its stop; the plan still holds, under the partition's "
               "lease", "nothing",
               "as read: a failed verification drops the staged note, so a clear reads again"),
    Transition("publish", "verified", "published", "alone",
               "the partition's lease held since the verify",
               "the partition with its manifest (the plan id)",
               "the next try finds the publish by its plan id and does not repeat it"),
    Transition("advance", "published", "advanced", "alone",
               "the checkpoint's lease; the checkpoint only moves forward",
               "the checkpoint, then the staged note is dropped",
               "nothing to do: the next try finds the checkpoint advanced by this plan"),
)


def table() -> str:
    """The transitions as a Markdown table (docs/extending.md)."""
    rows = ["| transition | from → to | role | guarded by | persists | a crash after it |",
            "|---|---|---|---|---|---|"]
    rows += [f"| `{t.name}` | {t.source} → {t.target} | {t.role} | {t.guard} | {t.keeps} | "
             f"{t.resume} |" for t in TRANSITIONS]
    return "\n".join(rows)
