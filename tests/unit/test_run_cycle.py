"""The run life cycle's transitions and guards (``commit.lifecycle``, ``commit.lease``): a saved
plan is reused only while it holds, a stale one is refused before anything is read or
published, a commit is idempotent, one holder commits a partition at a time, the checkpoint
only moves forward, and a commit removes only the staging areas that are no one else's.
Real files and real publishes; the checkpoint store is a dict here (Airflow's asset state
is the glue's, covered through Airflow in tests/integration/test_clear_after_newer.py)."""
import os
import threading
import time
from dataclasses import replace

import pytest

from streamslice.commit.lease import Lease
from streamslice.commit.lifecycle import RunCycle
from streamslice.commit.manifest import Manifest, read_manifest
from streamslice.commit.protocol import attempt_name
from streamslice.commit.publishers.files import DirectoryRename
from streamslice.errors import CommitError, StalePlanError
from streamslice.planning.plan import OutputTarget
from streamslice.reading.staging import Staging
from tests.support.checks import present
from tests.unit import test_partition_path as interval_case
from tests.unit.test_commit import GOOD_ROWS, good_summaries, make_plan, stage


class Store:
    """A checkpoint store in memory (``get``/``put``), counting the writes."""

    def __init__(self, checkpoint=None, slow=0.0):
        self.checkpoint, self.puts, self.slow = checkpoint, 0, slow

    def get(self):
        seen = self.checkpoint
        time.sleep(self.slow)  # a read that another writer may overtake
        return seen

    def put(self, checkpoint):
        self.checkpoint, self.puts = checkpoint, self.puts + 1


def staged(tmp_path, plan, run_id, what="try1"):
    """``plan``'s good read in a staging area named as a task names it."""
    area = tmp_path / "_streamslice" / "ds" / "staging" / plan.partition / \
        attempt_name(run_id, what)
    stage(area.parent, GOOD_ROWS, good_summaries(plan))
    os.rename(area.parent / "staging", area)
    return Staging(str(area))


def test_a_saved_plan_is_reused_while_its_base_holds(tmp_path):
    plan = make_plan(1, dataset=str(tmp_path / "ds"))
    store = Store()
    cycle = RunCycle("a", store)
    assert present(cycle.saved_plan(plan.to_dict())).partition == "batch=00000001"
    assert cycle.saved_plan(None) is None
    # run b commits batch 1 from the same base: a's saved plan no longer holds
    RunCycle("b", store).commit(plan, staged(tmp_path, plan, "b"), now_ms=1)
    assert store.checkpoint.run_id == "b"
    assert cycle.saved_plan(plan.to_dict()) is None
    with pytest.raises(StalePlanError, match=r"checkpoint moved since this run was planned "
                                             r"\(planned from batch 0, now at batch 1 by run "
                                             r"b\).*Clear the whole run"):
        cycle.check_holds(plan)
    # b's own plan holds for b (a retry after its checkpoint was written)
    assert RunCycle("b", store).saved_plan(plan.to_dict()) is not None


def test_a_stale_plan_is_refused_before_it_is_published(tmp_path):
    ds = tmp_path / "ds"
    newer = make_plan(1, dataset=str(ds))
    store = Store()
    RunCycle("b", store).commit(newer, staged(tmp_path, newer, "b"), now_ms=1)
    published = read_manifest(str(ds), "batch=00000001")
    stale = replace(make_plan(1, dataset=str(ds)), planned_at=-1)  # a's plan, same base
    with pytest.raises(StalePlanError):
        RunCycle("a", store).commit(stale, staged(tmp_path, stale, "a"), now_ms=2)
    assert read_manifest(str(ds), "batch=00000001") == published
    assert store.checkpoint.run_id == "b" and store.puts == 1


def test_a_commit_is_idempotent(tmp_path):
    plan = make_plan(1, dataset=str(tmp_path / "ds"))
    store = Store()
    cycle = RunCycle("a", store)
    first, checkpoint = cycle.commit(plan, staged(tmp_path, plan, "a"), now_ms=1)
    # a retry after a crash past the checkpoint: its staging area is gone, its publish found
    again, same = cycle.commit(plan, staged(tmp_path, plan, "a", "try2"), now_ms=2)
    assert (again.plan_id, same) == (first.plan_id, checkpoint)
    gone = Staging(str(tmp_path / "nothing"))
    assert cycle.commit(plan, gone, now_ms=3)[1] == checkpoint
    assert store.puts == 1
    assert not (tmp_path / "_streamslice" / "ds" / "staging" / plan.partition).exists()


def test_a_commit_removes_its_own_and_finished_runs_staging_areas_only(tmp_path):
    ds = tmp_path / "ds"
    plan = interval_case.make_plan(str(ds), None)

    def area(run):
        where = f"_streamslice/ds/staging/{plan.partition}/{attempt_name(run, 'try1')}"
        return interval_case.stage(tmp_path, plan, where)
    mine = area("manual__2024-05-01T01:00:00+00:00")
    for run in ("done", "reading"):
        area(run)
    busy = {"done": False, "reading": True}
    cycle = RunCycle("manual__2024-05-01T01:00:00+00:00", Store(),
                     busy=lambda owner: busy.get(owner, True))
    cycle.commit(plan, mine, now_ms=1)
    left = os.listdir(tmp_path / "_streamslice" / "ds" / "staging" / plan.partition)
    assert left == ["reading-try1"]


def test_a_gone_or_emptied_staging_area_is_not_published_over_data(tmp_path):
    ds = tmp_path / "ds"
    plan = make_plan(1, dataset=str(ds))
    RunCycle("a", Store()).commit(plan, staged(tmp_path, plan, "a"), now_ms=1)
    before = sorted(os.listdir(ds / "batch=00000001"))
    publisher = DirectoryRename(OutputTarget(str(ds)))
    st = staged(tmp_path, plan, "b")
    manifest = replace(Manifest.from_dict(read_manifest(str(ds), "batch=00000001")), records=7)
    for path in sorted((tmp_path / "_streamslice").rglob("staging/*/b-try1/data/*")):
        path.unlink()  # another commit's clean-up took the read
    with pytest.raises(CommitError, match="holds no data, but 7 records were verified"):
        publisher.publish(plan, st, manifest)
    with pytest.raises(CommitError, match="is gone; nothing was published"):
        publisher.publish(plan, Staging(str(tmp_path / "nothing")), manifest)
    assert sorted(os.listdir(ds / "batch=00000001")) == before


def test_the_checkpoint_only_moves_forward_under_concurrent_commits(tmp_path):
    """Two intervals committed at once, each reading the checkpoint before the other
    writes: without the checkpoint's lease the older interval's write lands last."""
    ds = tmp_path / "ds"
    store = Store(slow=0.3)
    plans = [interval_case.make_plan(str(ds), None, start=interval_case.T0 + h *
                                     interval_case.HOUR) for h in (2, 1)]
    for p, h in zip(plans, (2, 1)):
        p.partition = f"interval=20240501T{h:02d}0000Z"
    errors = []

    def commit(plan, run):
        try:
            RunCycle(run, store).commit(plan, interval_case.stage(tmp_path, plan, run),
                                        now_ms=1)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=commit, args=(p, f"r{i}"))
               for i, p in enumerate(plans)]
    for t in threads:
        t.start()
        time.sleep(0.1)  # the newer interval reads first
    for t in threads:
        t.join()
    assert errors == []
    assert store.checkpoint.interval_end == plans[0].interval.end


def test_one_holder_at_a_time(tmp_path):
    output = OutputTarget(str(tmp_path / "ds"))
    with Lease(output, "partition/x", "a"):
        with pytest.raises(CommitError, match="partition/x stayed held by run a"):
            Lease(output, "partition/x", "b", wait_s=0.3).take()
        with Lease(output, "partition/x", "a"):  # an earlier try of the same run: taken back
            pass
    with Lease(output, "partition/x", "b"):  # released
        pass


def test_a_lease_of_a_dead_holder_is_broken(tmp_path):
    output = OutputTarget(str(tmp_path / "ds"))
    held = Lease(output, "partition/x", "a")
    held.take()  # never released: the holder died
    with pytest.raises(CommitError):
        Lease(output, "partition/x", "b", wait_s=0.3, alive=lambda run: True).take()
    with Lease(output, "partition/x", "b", alive=lambda run: run != "a"):
        pass
    dead = Lease(output, "partition/x", "c")
    dead.me = replace(dead.me, pid=_a_pid_that_is_gone())  # a process of this host, gone
    dead.take()
    with Lease(output, "partition/x", "d", wait_s=5):
        pass


def _a_pid_that_is_gone():
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_two_commits_of_one_interval_never_interleave(tmp_path, monkeypatch):
    """A manual run and a backfill's run of one interval commit at once: the backfill's run
    is held just before its publish while the manual run commits. The manual run waits for
    the partition's lease instead of publishing in between and removing the backfill run's
    staging area, so the backfill run never publishes a missing read as an empty partition;
    the partition ends whole, its manifest counting the files it holds."""
    import pyarrow.dataset as pads

    from streamslice.errors import faults
    ds = tmp_path / "ds"
    plans = {run: interval_case.make_plan(str(ds), None) for run in ("backfill", "manual")}
    plans["manual"].planned_at = 1
    areas = {run: interval_case.stage(
        tmp_path, plan, f"_streamslice/ds/staging/{plan.partition}/{attempt_name(run, 'try1')}")
        for run, plan in plans.items()}
    paused, go = threading.Event(), threading.Event()
    check = faults.check

    def held(point, *a, **k):
        if point == "before_publish" and threading.current_thread().name == "backfill":
            paused.set()
            go.wait(10)
        return check(point, *a, **k)
    monkeypatch.setattr(faults, "check", held)
    store, errors = Store(), []

    def commit(run):
        try:
            RunCycle(run, store, busy=lambda owner: True).commit(plans[run], areas[run],
                                                                 now_ms=1)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append((run, exc))
    backfill = threading.Thread(target=commit, args=("backfill",), name="backfill")
    backfill.start()
    assert paused.wait(10)
    manual = threading.Thread(target=commit, args=("manual",), name="manual")
    manual.start()
    manual.join(1.0)  # it waits for the lease (or, unguarded, commits meanwhile)
    go.set()
    backfill.join()
    manual.join()
    assert errors == []
    folder = ds / plans["manual"].partition
    manifest = present(read_manifest(str(ds), plans["manual"].partition))
    rows = pads.dataset(str(folder), format="parquet").count_rows()
    assert (manifest["records"], rows, manifest["run_id"]) == (2, 2, "manual")
