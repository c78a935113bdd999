"""Read ahead's claims (``reading.ahead``) in the output asset's state, and the queued runs
they are for, found through Airflow's task SDK."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..commit.lease import Lease
from ..config.schedule import interval_containing
from ..errors import RecordError
from ..planning.planner import partition_name
from ..reading.ahead import ReadAhead, key
from ..timestamps import from_ms
from .checkpoint_store import output_asset
from .runs import alive

if TYPE_CHECKING:
    from airflow.sdk import Context

    from ..config.pipeline import PipelineConfig
    from ..planning.plan import Interval, ReadPlan

log = logging.getLogger("streamslice")
TASK = "plan_read_commit"
POLL_S = 1.0
# A task instance in these states has not run yet, so its run has not looked for a claim.
NOT_STARTED = (None, "scheduled", "queued")
LEASE = "read_ahead"  # the work area's lease on the pipeline's claims


def now_ms() -> int:
    return int(time.time() * 1000)


class Claims:
    """The claims of one pipeline, seen from one run's task."""

    def __init__(self, cfg: PipelineConfig, context: Context) -> None:
        self.cfg, self.ti, self.run_id = cfg, context["ti"], context["run_id"]
        self.state = context["asset_state_store"][output_asset(cfg)]
        self.alive = alive(context)

    def lease(self) -> Lease:
        """Held while claims are read and written: Airflow's asset state has no
        compare-and-set for a task, so two runs' tasks never claim, complete or drop at
        once."""
        return Lease(self.cfg.output.target(self.cfg.name), LEASE, self.run_id,
                     alive=self.alive)

    def get(self, partition: str) -> ReadAhead | None:
        raw = self.state.get(key(partition))
        try:
            return ReadAhead.from_dict(raw) if raw else None
        except RecordError as exc:  # written by another release: not this run's read
            log.warning("Ignoring the read-ahead claim on %s: %s", partition, exc)
            return None

    def put(self, partition: str, claim: ReadAhead) -> None:
        self.state.set(key(partition), claim.to_dict())

    def drop(self, partition: str) -> None:
        self.state.delete(key(partition))

    def wait(self, partition: str) -> ReadAhead | None:
        """The claim another run's task made on this run's interval, once it is read; None
        when there is none, or it is not this run's, stale, or its reader gave up or died
        (such a claim is dropped). While it is being read, this waits (``POLL_S``) rather
        than read the same records at once."""
        waited = False
        while True:
            claim = self.get(partition)
            if claim is None:
                return None
            if claim.adoptable(self.run_id, now_ms()):
                return claim
            if claim.pending(self.run_id, now_ms()) and self._reading(claim.by):
                if not waited:
                    log.info("Run %s is reading %s for this run; waiting for it.", claim.by,
                             partition)
                    waited = True
                time.sleep(POLL_S)
                continue
            with self.lease():
                if self.get(partition) != claim:
                    continue  # completed or taken over meanwhile: look again
                log.info("Not using the read-ahead claim of run %s on %s (%s).", claim.by,
                         partition, "stale or for another run" if claim.read else
                         "its reader stopped")
                self.drop(partition)
            return None

    def _reading(self, run_id: str) -> bool:
        states = self.ti.get_task_states(dag_id=self.ti.dag_id, task_ids=[TASK],
                                         run_ids=[run_id])
        return bool(states.get(run_id, {}).get(TASK) == "running")

    def claim(self, after: Interval) -> list[tuple[str, Interval]]:
        """Claim the intervals after ``after`` whose runs have not started their task and that
        are closed: up to ``cfg.read_ahead`` of them, looking no further than that many plus
        ``max_active_runs`` (the runs that may be running meanwhile) intervals, and up to the
        first interval without a run or claimed by another run's task (a claim an earlier
        try of this run made is taken again, so its runs do not wait it out). (run id,
        interval) of each."""
        with self.lease():
            return self._claim(after)

    def _claim(self, after: Interval) -> list[tuple[str, Interval]]:
        claimed: list[tuple[str, Interval]] = []
        interval = after
        for _ in range(self.cfg.read_ahead + self.cfg.max_active_runs):
            if len(claimed) == self.cfg.read_ahead:
                break
            interval = interval_containing(self.cfg, interval.end)
            if now_ms() < interval.end + interval.allowed_lateness:
                break  # still open: no run can read it yet
            # Airflow's task states are keyed by run id alone: one interval a question
            runs = self.ti.get_task_states(dag_id=self.ti.dag_id, task_ids=[TASK],
                                           logical_dates=[from_ms(interval.start)])
            if not runs:
                break  # the end of the runs there are
            run_id, tasks = next(iter(runs.items()))
            if tasks.get(TASK) not in NOT_STARTED:
                continue  # started: it plans and reads for itself
            partition = partition_name("interval", interval)
            held = self.get(partition)
            if held is not None and held.by != self.run_id:  # an earlier try's is retaken
                break  # another run's task reads from here on: no interleaved claims
            self.put(partition, ReadAhead(run_id=run_id, by=self.run_id, claimed_at=now_ms()))
            claimed.append((run_id, interval))
        return claimed

    def complete(self, partition: str, plan: ReadPlan[Any], staging: str) -> None:
        """Record what was read for a claimed interval, unless the claim is no longer this
        run's (its own run stopped waiting and dropped it)."""
        with self.lease():
            claim = self.get(partition)
            if claim is None or claim.by != self.run_id:
                log.info("The claim on %s was dropped meanwhile; its run reads for itself.",
                         partition)
                return
            claim.plan, claim.staging = plan.to_dict(), staging
            self.put(partition, claim)
