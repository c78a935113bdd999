"""The run as one object (``commit.run``, ``commit.states``): each transition, what it
persists, that repeating it does nothing new, and that a crash in any state resumes from what
is persisted. Real files and real publishes; the host (Airflow and Spark in a DAG: plan against
a broker, run the read job, report to the UI), the task's state and the claims are fakes here,
to cover the run's own logic alone (tests/integration/test_combined_task.py and
test_read_ahead.py run it through Airflow)."""
import os
from dataclasses import replace
from pathlib import Path

import pytest

from streamslice.commit.lifecycle import RunCycle
from streamslice.commit.manifest import plan_id, read_manifest
from streamslice.commit.run import Run
from streamslice.commit.states import (
    PLAN,
    STAGED,
    STATES,
    TRANSITIONS,
    Persisted,
    Staged,
    state_of,
    table,
)
from streamslice.errors import CommitError, InjectedFault, SourceError, StalePlanError
from streamslice.planning.plan import Interval
from streamslice.reading.ahead import ReadAhead
from tests.unit.test_commit import GOOD_ROWS, good_summaries, make_plan, stage
from tests.unit.test_run_cycle import Store

ROOT = Path(__file__).resolve().parents[2]


class TaskState(dict):
    """A task's state store: get, set, delete."""

    def set(self, key, value):
        self[key] = value

    def delete(self, key):
        self.pop(key, None)


class Host:
    """Plans ``make_plan`` batches and 'reads' by staging a good read of them."""

    def __init__(self, tmp_path, batch=1, interval=None):
        self.tmp, self.batch, self.interval_, self.reads, self.facts = \
            tmp_path, batch, interval, [], []
        self.fail_ahead = False

    def interval(self):
        return self.interval_

    def wait_closed(self, interval):
        pass

    def new_plan(self, interval, checkpoint, run_id):
        plan = make_plan(self.batch, base=checkpoint.to_dict() if checkpoint else None,
                         dataset=str(self.tmp / "ds"))
        return replace(plan, run_id=run_id)

    def read(self, plan, staging, ahead):
        self.reads.append((plan.partition, [p.partition for p, _ in ahead]))
        if ahead and self.fail_ahead:
            raise SourceError("the job with queued runs failed")
        for p, uri in [(plan, staging), *ahead]:
            good_read(p, uri)

    def connect(self, plan):
        pass

    def show(self, plan):
        pass

    def report(self, **facts):
        self.facts.append(facts)

    def timed(self, step, seconds):
        pass

    def committed(self, plan, manifest, checkpoint, seconds):
        pass


def good_read(plan, uri):
    area = Path(uri)
    stage(area.parent / (area.name + ".tmp"), GOOD_ROWS, good_summaries(plan))
    os.rename(area.parent / (area.name + ".tmp") / "staging", area)


def a_run(tmp_path, store=None, kept=None, attempt="try1", run_id="r", claims=None, **host):
    cycle = RunCycle(run_id, store if store is not None else Store())
    return Run(cycle, kept if kept is not None else TaskState(), Host(tmp_path, **host),
               attempt, claims)


def test_the_state_is_what_is_persisted():
    assert state_of(Persisted()) == "new"
    assert state_of(Persisted("p")) == "planned"
    assert state_of(Persisted("p", Staged("other", "s"))) == "planned"  # an older plan's read
    assert state_of(Persisted("p", Staged("p", "s"))) == "read"
    assert state_of(Persisted("p", Staged("p", "s"), published=True)) == "published"
    assert state_of(Persisted("p", None, published=True, advanced=True)) == "advanced"


def test_plan_saves_the_plan_and_a_retry_reuses_it_while_it_holds(tmp_path):
    store, kept = Store(), TaskState()
    run = a_run(tmp_path, store, kept)
    assert run.state() == "new"
    plan = run.plan()
    assert kept[PLAN] == plan.to_dict() and run.state() == "planned"
    again = a_run(tmp_path, store, kept, attempt="try2")
    again.host.batch = 7  # a new plan would differ
    assert again.plan() == plan
    # another run commits from the same base: the saved plan no longer holds
    a_run(tmp_path, store, run_id="b").combined()
    assert a_run(tmp_path, store, kept, batch=2).plan().batch == 2


def test_read_is_refused_for_a_plan_that_no_longer_holds(tmp_path):
    store = Store()
    run = a_run(tmp_path, store)
    plan = run.plan()
    a_run(tmp_path, store, run_id="b").combined()
    with pytest.raises(StalePlanError):
        run.read(plan)
    assert run.host.reads == []


def test_read_stages_into_the_tries_own_area_and_commit_advances(tmp_path):
    store = Store()
    run = a_run(tmp_path, store, attempt="try3")
    plan = run.plan()
    staging, ahead = run.read(plan)
    assert staging.endswith("/staging/batch=00000001/r-try3") and ahead == ()
    outcome = run.commit(plan, staging)
    assert outcome.manifest.plan_id == plan_id(plan)
    assert store.checkpoint.run_id == "r" and run.state(plan) == "advanced"
    assert run.commit(plan, staging).checkpoint == outcome.checkpoint  # again: found as is
    assert store.puts == 1


def test_combined_commits_a_noted_read_without_reading_again(tmp_path):
    kept = TaskState()
    run = a_run(tmp_path, kept=kept)
    plan = run.plan()
    staging = run.staging(plan)
    good_read(plan, staging)
    run.note(plan, staging)
    assert run.state() == "read"
    run.combined()
    assert run.host.reads == [] and STAGED not in kept and run.state() == "advanced"


@pytest.mark.parametrize("fault", ["after_publish", "after_checkpoint"])
def test_a_crash_after_publish_or_advance_resumes_without_reading_or_publishing(
        tmp_path, monkeypatch, fault):
    store, kept = Store(), TaskState()
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", fault)
    with pytest.raises(InjectedFault):
        a_run(tmp_path, store, kept).combined()
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    retry = a_run(tmp_path, store, kept, attempt="try2")
    assert retry.state() == ("published" if fault == "after_publish" else "advanced")
    published = read_manifest(str(tmp_path / "ds"), "batch=00000001")
    retry.combined()
    assert retry.host.reads == [] and store.puts == 1
    assert read_manifest(str(tmp_path / "ds"), "batch=00000001") == published


def test_a_noted_read_that_fails_to_commit_is_forgotten(tmp_path):
    kept = TaskState()
    run = a_run(tmp_path, kept=kept)
    plan = run.plan()
    run.note(plan, str(tmp_path / "gone"))
    with pytest.raises(CommitError, match="is gone"):
        run.combined()
    assert STAGED not in kept and run.state() == "planned"
    run.combined()  # the next try reads the plan again
    assert len(run.host.reads) == 1 and run.state() == "advanced"


def test_a_fresh_read_that_fails_verification_is_not_kept(tmp_path, monkeypatch):
    kept = TaskState()
    run = a_run(tmp_path, kept=kept)
    monkeypatch.setattr("tests.unit.test_run_states.good_summaries",
                        lambda plan: good_summaries_of(plan)[:-1])  # a split not reached
    with pytest.raises(CommitError):
        run.combined()
    assert STAGED not in kept and run.state() == "planned"


good_summaries_of = good_summaries
HOUR = 3_600_000


class Claims:
    """The pipeline's claims: ``queued`` run ids get claimed after this run's interval."""

    def __init__(self, queued=(), waiting=None):
        self.queued, self.waiting = list(queued), waiting
        self.completed, self.dropped = {}, []

    def wait(self, partition):
        return self.waiting

    def claim(self, after):
        return [(r, Interval(after.end + i * HOUR, after.end + (i + 1) * HOUR))
                for i, r in enumerate(self.queued)]

    def complete(self, partition, plan, staging):
        self.completed[partition] = (plan.to_dict(), staging)

    def drop(self, partition):
        self.dropped.append(partition)


def interval_plans(monkeypatch):
    """Plans with an interval (as read ahead needs), one batch per run."""
    batches: dict[str, int] = {}

    def new_plan(self, interval, checkpoint, run_id):
        batch = batches.setdefault(run_id, len(batches) + 1)
        plan = make_plan(batch, dataset=str(self.tmp / "ds"))
        return replace(plan, run_id=run_id, interval=interval, base_checkpoint=None,
                       mode="interval")
    monkeypatch.setattr(Host, "new_plan", new_plan)
    monkeypatch.setattr("streamslice.commit.run.direct_codec", lambda plan: "zstd")


def test_a_leader_reads_the_claimed_runs_with_its_own_and_completes_their_claims(
        tmp_path, monkeypatch):
    interval_plans(monkeypatch)
    claims = Claims(queued=["q1", "q2"])
    run = a_run(tmp_path, claims=claims, interval=Interval(0, HOUR))
    outcome = run.combined()
    assert run.host.reads == [("batch=00000001", ["batch=00000002", "batch=00000003"])]
    assert outcome.read_ahead == ("batch=00000002", "batch=00000003")
    plan, staging = claims.completed["batch=00000002"]
    assert plan["run_id"] == "q1" and staging.endswith("/q1-ahead")


def test_a_leader_whose_shared_read_fails_drops_its_claims_and_reads_alone(
        tmp_path, monkeypatch):
    interval_plans(monkeypatch)
    claims = Claims(queued=["q1"])
    run = a_run(tmp_path, claims=claims, interval=Interval(0, HOUR))
    run.host.fail_ahead = True
    assert run.combined().read_ahead == ()
    assert [r for _, r in run.host.reads] == [["batch=00000002"], []]
    assert claims.dropped == ["batch=00000002"] and claims.completed == {}


def test_a_follower_adopts_a_read_claim_and_a_run_that_planned_before_does_not(
        tmp_path, monkeypatch):
    interval_plans(monkeypatch)
    leader = a_run(tmp_path, claims=Claims(queued=["f"]), interval=Interval(0, HOUR))
    leader.combined()
    plan, staging = leader.claims.completed["batch=00000002"]
    claim = ReadAhead(run_id="f", by="r", claimed_at=0, plan=plan, staging=staging)
    kept = TaskState()
    follower = a_run(tmp_path, kept=kept, run_id="f", claims=Claims(waiting=claim),
                     interval=Interval(HOUR, 2 * HOUR))
    outcome = follower.combined()
    assert follower.host.reads == [] and kept[PLAN] == plan
    assert outcome.manifest.partition == "batch=00000002" and follower.state() == "advanced"
    assert follower.claims.dropped == ["interval=19700101T010000Z"]
    # a run whose earlier try planned reads its own plan, and drops the claim
    own = replace(make_plan(9, dataset=str(tmp_path / "ds")), run_id="g", mode="interval",
                  interval=Interval(HOUR, 2 * HOUR))
    planned = a_run(tmp_path, kept=TaskState({PLAN: own.to_dict()}), run_id="g",
                    claims=Claims(waiting=claim), interval=Interval(HOUR, 2 * HOUR))
    assert planned.combined().manifest.partition == "batch=00000009"
    assert planned.host.reads == [("batch=00000009", [])]
    assert planned.claims.dropped == ["interval=19700101T010000Z"]


def test_the_transitions_cover_every_state_and_the_docs_table_is_the_codes():
    reached = {t.target for t in TRANSITIONS} | {t.source for t in TRANSITIONS}
    assert reached == set(STATES)
    assert {t.role for t in TRANSITIONS} == {"alone", "leader", "follower"}
    assert table() in (ROOT / "docs" / "extending.md").read_text()


class CatalogHost(Host):
    """Plans into an Iceberg table whose catalog, as with ``output.conn_id``, is known only
    once the host connects the plan (the connection is never in the saved plan)."""

    def __init__(self, tmp_path, output):
        super().__init__(tmp_path)
        self.output = output

    def new_plan(self, interval, checkpoint, run_id):
        from tests.unit.test_table_publishers import make_plan as table_plan
        return replace(table_plan(replace(self.output, catalog={})), run_id=run_id)

    def read(self, plan, staging, ahead):
        from tests.unit.test_table_publishers import stage as table_stage
        self.reads.append((plan.partition, []))
        area = Path(table_stage(self.tmp, plan, [0, 1, 2]).root)
        Path(staging).parent.mkdir(parents=True, exist_ok=True)
        os.rename(area, staging)

    def connect(self, plan):
        plan.output = replace(plan.output, catalog=self.output.catalog)


def test_the_state_of_a_run_into_a_catalog_table_is_read_with_the_catalog_connected(
        tmp_path, monkeypatch):
    """A crash after an Iceberg publish whose catalog comes from a connection: the retry sees
    ``published`` (the state looks in the connected catalog), then commits without
    publishing again."""
    from tests.unit.test_table_publishers import scan, target
    output = target(tmp_path, "iceberg")
    store, kept = Store(), TaskState()

    def run(attempt):
        return Run(RunCycle("r", store), kept, CatalogHost(tmp_path, output), attempt, None)
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "after_publish")
    with pytest.raises(InjectedFault):
        run("try1").combined()
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    retry = run("try2")
    assert retry.state() == "published"
    commits = scan(output)[1]
    retry.combined()
    assert retry.host.reads == [] and scan(output)[1] == commits and retry.state() == "advanced"
