"""Progress marks (``planning.progress``): an idle partition's tip, frozen by the first run
that needs it as a boundary, closes the interval for every run. Checked on the marks
themselves, then over simulated live partitions: records appended as a clock runs (bursts,
idle stretches, late and replayed records, producer clocks skewed), intervals run when they
close, in shuffled order and late, each run planned from the log as it is then. Every record
is kept by exactly one run, by its timestamp and by an event-time field. The store is an
in-memory stand-in for the output asset's state (the compare-and-set is ours to cover)."""
import random
import threading

import pyarrow as pa
import pytest

from streamslice.errors import PlanError
from streamslice.planning.bounds import IntervalBounds, classify, classify_event_time
from streamslice.planning.plan import Interval
from streamslice.planning.progress import Marks, Progress, key
from streamslice.reading.event_time import EventTime

W = 1000
ET = EventTime("event_time")


class MemoryStore:
    """Asset state in a dict, with the compare-and-set ``MarkStore`` asks for."""

    def __init__(self):
        self.values, self.writes = {}, 0

    def get(self, k):
        return self.values.get(k)

    def replace(self, k, old, new):
        if self.values.get(k) != old:
            return False
        self.values[k] = new
        self.writes += 1
        return True

    def settle(self):
        pass


class RacyStore(MemoryStore):
    """A store whose write can replace another run's unseen, as a task's asset state can
    when two runs read a key before either writes it."""

    def replace(self, k, old, new):
        self.values[k] = new
        return True


def test_first_freeze_wins_and_later_lookups_use_it():
    store = MemoryStore()
    assert Progress(store).bound("t:0", 5000, None, tip=7) == 7
    # the tip moved on (records stamped before 5000 arrived): the boundary stays
    assert Progress(store).bound("t:0", 5000, None, tip=9) == 7
    assert store.values[key("t:0")] == {"marks": [[5000, 7]], "version": 1}
    # a record at or after the time exists now: the earlier mark still caps it
    assert Progress(store).bound("t:0", 5000, 12, tip=13) == 7
    assert Progress(store).bound("t:0", 4000, 12, tip=13) == 7  # reached by then too
    assert Progress(store).bound("t:0", 6000, 12, tip=13) == 12  # after the mark: the log
    assert Progress(store).bound("t:1", 5000, None, tip=3) == 3  # each partition its own


def test_a_found_boundary_is_not_recorded():
    store = MemoryStore()
    assert Progress(store).bound("t:0", 5000, 4, tip=7) == 4
    assert store.values == {}


def test_a_concurrent_freeze_is_taken_instead_of_ours():
    store = MemoryStore()
    mine = Progress(store)
    assert mine.bound("t:0", 1000, 2, tip=3) == 2  # marks read: none
    Progress(store).bound("t:0", 5000, None, tip=4)  # another run freezes meanwhile
    assert mine.bound("t:0", 5000, None, tip=6) == 4  # compare-and-set fails, theirs wins


def test_a_mark_lost_to_a_racing_write_is_found_when_the_plan_is_confirmed():
    store = RacyStore()
    a, b = Progress(store), Progress(store)
    assert b.bound("t:0", 1000, 2, tip=3) == 2  # b read the marks: none yet
    assert a.bound("t:0", 5000, None, tip=4) == 4  # a freezes 5000 at offset 4
    assert b.bound("t:0", 6000, None, tip=6) == 6  # b writes from its read: a's mark lost
    assert not a.confirmed() and b.confirmed()
    again = Progress(store)  # a plans again, from the marks as they are
    assert again.bound("t:0", 5000, None, tip=6) == 6 and again.confirmed()
    assert Progress(MemoryStore()).confirmed()  # a plan that took no mark


def test_a_store_that_never_takes_the_write_fails_the_plan():
    class Busy(MemoryStore):
        def replace(self, k, old, new):
            return False
    with pytest.raises(PlanError, match="could not record where the partition's progress"):
        Progress(Busy()).bound("t:0", 5000, None, tip=4)


def test_marks_are_compacted_and_pruned_below_the_log_start():
    marks = Marks([[1000, 3], [2000, 5]]).with_mark(3000, 5, log_start=0)
    assert marks.marks == [[1000, 3], [3000, 5]]  # the later time at one position
    assert marks.with_mark(4000, 9, log_start=4).marks == [[3000, 5], [4000, 9]]
    assert marks.first_from(500) == 3 and marks.first_from(1001) == 5
    assert marks.first_from(3001) is None


# ---- simulated live partitions ----

def live_partition(seed, steps=60, event_time=False):
    """[(appended at step, Kafka timestamp, event time)] in offset order: the clock is
    ``step * W / 4``; idle stretches of several intervals, bursts, records stamped late
    (before the clock, up to 3 intervals), producer clocks ahead."""
    rng = random.Random(seed)
    out = []
    idle = False
    for step in range(steps):
        now = step * W // 4
        if rng.random() < 0.15:
            idle = not idle
        for _ in range(0 if idle and rng.random() < 0.8 else rng.randrange(0, 4)):
            kind = rng.random()
            ts = now - rng.randrange(3 * W) if kind < 0.25 else \
                now + rng.randrange(W // 2) if kind < 0.3 else now - rng.randrange(W // 8)
            ts = max(ts, 0)
            skew = rng.choice([0, 0, -W // 3, W // 5, -2 * W, None]) if event_time else None
            out.append((step, ts, None if skew is None else max(ts + skew, 0)))
    return out


def run(records, iv, progress, event_time):
    """One run as the Kafka planner and reader do it, over the log as it is now."""
    ts = [r[1] for r in records]

    def b(t):
        found = next((o for o, x in enumerate(ts) if x >= t), None)
        return progress.bound("t:0", t, found, len(ts)) if progress else \
            found if found is not None else len(ts)
    bounds = IntervalBounds(iv)
    lo, hi = b(bounds.time("data_interval_start")), b(bounds.read_until)
    at = {name: b(ms) for name, ms in bounds.ownership().items()}
    offs = list(range(lo, max(lo, hi)))
    if event_time:
        marks = classify_event_time(pa.array([records[o][2] for o in offs], pa.int64()),
                                    pa.array(offs, pa.int64()), iv, at)
        keep = [any(marks[h][j].as_py() for h in marks) for j in range(len(offs))]
    else:
        on_time, late = classify([ts[o] for o in offs], offs, iv, at["late_from"],
                                 at["owned_until"])
        keep = [a or b for a, b in zip(on_time.to_pylist(), late.to_pylist())]
    return [o for o, k in zip(offs, keep) if k]


def simulate(seed, lateness, event_time=False, frozen=True, intervals=None):
    """Runs each interval once it closed (clock past its end and lateness), after a random
    delay, so several are run out of order; the last ones after the last record."""
    rng = random.Random(seed + 1000)
    records = live_partition(seed, event_time=event_time)
    store = MemoryStore()
    ivs = intervals or [Interval(k * W, (k + 1) * W, lateness, ET if event_time else None,
                                 lateness // 2 if event_time else 0) for k in range(20)]
    due: dict[int, int | None] = {i: None for i in range(len(ivs))}  # -1 once it ran
    kept: dict[int, list[int]] = {}
    steps = records[-1][0] + 1 if records else 0
    for step in range(steps + 1):
        now = step * W // 4
        for i, iv in enumerate(ivs):
            if due[i] is None and iv.end + iv.allowed_lateness <= now:
                due[i] = step + rng.choice([0, 0, 0, 1, 4, 12])
        ready = [i for i, d in due.items() if d is not None and d != -1 and d <= step]
        rng.shuffle(ready)
        for i in ready:
            seen = [r for r in records if r[0] < step]
            for o in run(seen, ivs[i], Progress(store) if frozen else None, event_time):
                kept.setdefault(o, []).append(i)
            due[i] = -1
    for i in [i for i, d in due.items() if d != -1]:
        for o in run(records, ivs[i], Progress(store) if frozen else None, event_time):
            kept.setdefault(o, []).append(i)
    return records, kept


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("lateness", [0, 300, W])
@pytest.mark.parametrize("event_time", [False, True], ids=["timestamp", "event_time"])
def test_live_partition_every_record_exactly_once(seed, lateness, event_time):
    records, kept = simulate(seed, lateness, event_time)
    assert {o: len(v) for o, v in kept.items()} == {o: 1 for o in range(len(records))}


def test_without_marks_records_after_a_close_are_lost_or_doubled():
    """The same simulation with the tip as it is at each plan (the old look-up) fails: the
    check above can fail."""
    bad = 0
    for seed in range(10):
        records, kept = simulate(seed, 300, frozen=False)
        bad += sum(len(kept.get(o, [])) != 1 for o in range(len(records)))
    assert bad > 0


class SlowState:
    """A task's asset state (get and set, no compare-and-set) that plays the interleaving a
    lease must prevent: run ``a`` and run ``b`` each read the key before either writes, and
    ``b`` writes only after ``a`` has written and read its write back. A run kept waiting
    by the lease meanwhile makes a wait time out, and it goes on alone. In memory; the lease
    is the real one."""

    def __init__(self):
        self.values, self.read = {}, set()
        self.both_read, self.a_done = threading.Barrier(2, timeout=2), threading.Event()

    def get(self, k):
        run, value = threading.current_thread().name, self.values.get(k)
        if run not in self.read:
            self.read.add(run)
            try:
                self.both_read.wait()
            except threading.BrokenBarrierError:
                pass
        elif run == "a":
            self.a_done.set()
        return value

    def set(self, k, v):
        if threading.current_thread().name == "b":
            self.a_done.wait(timeout=2)
        self.values[k] = v


@pytest.mark.parametrize("leased", [True, False])
def test_marks_are_replaced_by_one_run_at_a_time_under_the_work_areas_lease(tmp_path, leased):
    """Two runs freezing one partition's boundary at once: under the lease one writes and
    the other finds the value changed (it then takes the first one's mark); without it both
    read the empty key and both 'win', the second silently replacing the first's mark."""
    from streamslice.airflow.checkpoint_store import TaskMarks
    from streamslice.commit.lease import Lease
    from streamslice.planning.plan import OutputTarget
    output, state = OutputTarget(str(tmp_path / "ds")), SlowState()

    class NoLease:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def lease(run):
        return (lambda name: Lease(output, name, run)) if leased else (lambda name: NoLease())
    won: dict[str, bool] = {}
    runs = [threading.Thread(name=r, target=lambda r=r: won.__setitem__(
        r, TaskMarks(state, lease(r)).replace("progress/t:0", None, {"by": r})))
        for r in ("a", "b")]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    if leased:
        assert sorted(won.values()) == [False, True]
        assert state.values["progress/t:0"] == {"by": next(r for r, w in won.items() if w)}
    else:  # what the lease prevents (this test's own check that it can fail)
        assert won == {"a": True, "b": True} and state.values["progress/t:0"] == {"by": "b"}
