"""Read ahead: a combined task that reads its own interval also reads, in the same Spark job,
the intervals of the next runs of its pipeline that are queued and not started, each into a
staging area of that run's own; each of those runs then commits what was read for it, in its
own task, with the plan it was read by. A backfill then pays a job's fixed cost (a Spark
Connect session, the server's planning, a JVM on ``local``) once for several intervals instead
of once an interval, and each interval stays one DAG run, published once and replaceable on
its own.

A claim is a ``ReadAhead`` record in the output asset's state, one key an interval: written by
the reading run before its job (``read`` unset), completed with the plan and staging area
after it. The run it names adopts a completed claim (``adoptable``) instead of planning and
reading, waits for a claim still being read while its reader lives (``LEASE_MS`` at most),
and reads for itself otherwise. Nothing depends on a claim for exactly once: what a run
commits is verified against the plan it commits, as any staged read is, and a run that reads
for itself publishes its own read (its publish removes its run's staging areas, the one read
ahead for it too). Claims are read and written under a lease in the output's work area
(``commit.lease``), so two runs' tasks never claim one interval at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..records import RecordKind, Versioned

PREFIX = "read_ahead/"
LEASE_MS = 15 * 60_000  # a claim not read by then is abandoned (its reader died unseen)
KEEP_MS = 6 * 3_600_000  # a read not adopted by then is stale: its run reads for itself


def key(partition: str) -> str:
    """The asset state key of the claim on one interval's output partition."""
    return PREFIX + partition


@dataclass
class ReadAhead(Versioned):
    """One interval read (or being read) by another run's task for the run ``run_id``."""

    KIND: ClassVar[RecordKind] = RecordKind("read-ahead claim", 1)

    run_id: str  # the run of the interval, which commits it
    by: str  # the run whose task reads it
    claimed_at: int  # epoch ms
    plan: dict[str, Any] | None = None  # the plan it was read by, once read
    staging: str | None = None  # the staging area it was read into, once read
    version: int = 1

    @property
    def read(self) -> bool:
        return self.plan is not None and self.staging is not None

    def adoptable(self, run_id: str, now_ms: int) -> bool:
        """Read for ``run_id``, recently enough to be that run's read."""
        return self.read and self.run_id == run_id and now_ms - self.claimed_at < KEEP_MS

    def pending(self, run_id: str, now_ms: int) -> bool:
        """Still being read for ``run_id`` within its lease: worth waiting for."""
        return not self.read and self.run_id == run_id and now_ms - self.claimed_at < LEASE_MS
