"""Read ahead's own rules (``reading.ahead``, ``airflow.claims``): which queued runs a combined
task claims, when a run adopts, waits for or drops a claim, and what the pipeline file allows.
Airflow's task SDK (task states, an asset's state) is faked here, to cover our logic alone;
tests/integration/test_read_ahead.py runs it through Airflow's scheduler and Spark Connect."""
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

import pytest

from streamslice.airflow import claims as claim_book
from streamslice.airflow.checkpoint_store import output_asset
from streamslice.airflow.claims import Claims
from streamslice.errors import ConfigError
from streamslice.reading.ahead import KEEP_MS, LEASE_MS, ReadAhead, key
from tests.support.pipelines import parsed
from tests.unit.test_commit import make_plan

if TYPE_CHECKING:
    from airflow.sdk import Context

T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
NOW = T0 + 1000 * HOUR


def iso(ms):
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()


def part(hour):
    return f"interval=20240501T{hour:02d}0000Z"


class FakeState:
    """An asset's state as the task SDK's accessor offers it: get, set, delete."""

    def __init__(self):
        self.values = {}

    def get(self, k, default=None):
        return self.values.get(k, default)

    def set(self, k, value):
        self.values[k] = value

    def delete(self, k):
        self.values.pop(k, None)


class FakeTI:
    """The task SDK's task states: ``runs`` maps a run id to its plan_read_commit state."""

    dag_id = "p"

    def __init__(self, runs):
        self.runs, self.asked = runs, []

    def get_task_states(self, dag_id, task_ids, logical_dates=None, run_ids=None):
        self.asked.append((logical_dates, run_ids))
        return {r: {claim_book.TASK: s} for r, s in self.runs.items()
                if (run_ids is None or r in run_ids) and
                (logical_dates is None or r.partition("__")[2] in
                 [d.isoformat() for d in logical_dates])}


SPARK = {"runner": "connect", "remote": "sc://localhost:15002"}


LAKE: dict[str, str] = {}  # the test's output folder (the claims' lease is in its work area)


def pipeline(**fields):
    base = {"mode": "interval", "schedule": "@hourly", "start_date": "2024-05-01T00:00:00Z",
            "spark": SPARK, "output": LAKE.get("path", "/lake")}
    return parsed("kafka", {"bootstrap_servers": "localhost:9092", "topics": ["t"]},
                  **{**base, **fields})


def claims(runs, read_ahead=3, max_active_runs=2, state=None, run_id=None):
    cfg = pipeline(read_ahead=read_ahead, max_active_runs=max_active_runs)
    state = state or FakeState()
    context = {"ti": FakeTI(runs), "run_id": run_id or f"backfill__{iso(T0)}",
               "asset_state_store": {output_asset(cfg): state}}
    return Claims(cfg, cast("Context", context)), state  # fakes of what the task gets


def run(hour, kind="backfill"):
    return f"{kind}__{iso(T0 + hour * HOUR)}"


@pytest.fixture(autouse=True)
def now(monkeypatch, tmp_path):
    monkeypatch.setattr(claim_book, "now_ms", lambda: NOW)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    monkeypatch.setitem(LAKE, "path", str(tmp_path / "lake"))


def test_two_runs_claiming_at_once_never_claim_one_interval_twice():
    """Each run's task reads the claims before either writes (a barrier holds the first
    reads): without the claims' lease both would claim the same queued runs."""
    runs = {run(h): None for h in range(2, 8)}
    runs.update({run(0): "running", run(1): "running"})
    state = BlockingState(threading.Barrier(2, timeout=3))
    both = {me: claims(runs, read_ahead=2, state=state, run_id=run(me))[0] for me in (0, 1)}
    got = {}

    def claim(me):
        c = both[me]
        got[me] = [r for r, _ in c.claim(c.cfg.interval(T0 + me * HOUR,
                                                        T0 + (me + 1) * HOUR))]
    threads = [threading.Thread(target=claim, args=(me,)) for me in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[0] and got[1] == [] or got[1] and got[0] == [], got
    assert len({r for rs in got.values() for r in rs}) == sum(map(len, got.values()))


class BlockingState(FakeState):
    """The first read of each thread returns only once the other thread has read too."""

    def __init__(self, barrier):
        super().__init__()
        self.barrier, self.waited = barrier, set()

    def get(self, k, default=None):
        value, me = super().get(k, default), threading.get_ident()
        if me not in self.waited:
            self.waited.add(me)
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                pass  # the other is held off by the lease
        return value


def test_a_run_claims_the_next_queued_runs_up_to_read_ahead():
    c, state = claims({run(h): None for h in range(1, 10)})
    got = c.claim(c.cfg.interval(T0, T0 + HOUR))
    assert [(r, i.start) for r, i in got] == [(run(h), T0 + h * HOUR) for h in (1, 2, 3)]
    assert set(state.values) == {key(part(h)) for h in (1, 2, 3)}
    claim = ReadAhead.from_dict(state.values[key(part(2))])
    assert (claim.run_id, claim.by, claim.claimed_at, claim.read) == (
        run(2), run(0), NOW, False)
    assert len(c.ti.asked) == 3, "one question to Airflow an interval, until enough"


def test_started_runs_are_skipped_and_a_claim_of_another_run_ends_the_claims():
    runs = {run(1): "running", run(2): "scheduled", run(3): "success", run(4): "queued",
            run(5): None, run(6): None, run(7): None}
    c, state = claims(runs, read_ahead=10)
    state.set(key(part(5)), ReadAhead(run(5), by=run(9), claimed_at=NOW).to_dict())
    got = c.claim(c.cfg.interval(T0, T0 + HOUR))
    assert [r for r, _ in got] == [run(2), run(4)]  # 5 is another's: 6 is left to it


def test_a_retry_takes_again_the_claims_an_earlier_try_of_its_run_left():
    c, state = claims({run(h): None for h in range(1, 4)}, read_ahead=2)
    state.set(key(part(1)), ReadAhead(run(1), by=run(0), claimed_at=NOW - 60_000).to_dict())
    assert [r for r, _ in c.claim(c.cfg.interval(T0, T0 + HOUR))] == [run(1), run(2)]
    assert ReadAhead.from_dict(state.values[key(part(1))]).claimed_at == NOW


def test_claims_end_at_an_interval_without_a_run_or_still_open():
    c, _ = claims({run(1): None, run(3): None}, read_ahead=5)
    assert [r for r, _ in c.claim(c.cfg.interval(T0, T0 + HOUR))] == [run(1)]
    c, _ = claims({run(h): None for h in range(1, 5)}, read_ahead=5)
    late = NOW - HOUR  # the interval after it ends after now: still open
    assert c.claim(c.cfg.interval(late, late + HOUR)) == []
    assert c.ti.asked == []


def test_only_a_read_claim_for_this_run_is_adopted_and_the_others_are_dropped():
    c, state = claims({run(0): "running"}, run_id=run(0))
    read = ReadAhead(run(0), by=run(7), claimed_at=NOW - 60_000, plan={"v": 1}, staging="s")
    state.set(key(part(0)), read.to_dict())
    assert c.wait(part(0)) == read
    for stale in (ReadAhead(run(5), by=run(7), claimed_at=NOW, plan={}, staging="s"),
                  ReadAhead(run(0), by=run(7), claimed_at=NOW - KEEP_MS, plan={}, staging="s")):
        state.set(key(part(0)), stale.to_dict())
        assert c.wait(part(0)) is None
        assert state.values == {}
    assert c.wait(part(0)) is None  # no claim


def test_a_claim_being_read_is_waited_for_while_its_reader_runs(monkeypatch):
    reader = run(7)
    c, state = claims({run(0): "running", reader: "running"}, run_id=run(0))
    state.set(key(part(0)), ReadAhead(run(0), by=reader, claimed_at=NOW).to_dict())
    polls = []

    def read_after_two_polls(s):
        polls.append(s)
        if len(polls) == 2:
            done = ReadAhead(run(0), by=reader, claimed_at=NOW, plan={"v": 1}, staging="s")
            state.set(key(part(0)), done.to_dict())
    monkeypatch.setattr(time, "sleep", read_after_two_polls)
    assert c.wait(part(0)).staging == "s"
    assert len(polls) == 2


@pytest.mark.parametrize("reader_state, age", [("failed", 0), ("up_for_retry", 0),
                                               ("running", LEASE_MS)])
def test_a_claim_whose_reader_stopped_or_outlived_its_lease_is_dropped(reader_state, age):
    reader = run(7)
    c, state = claims({run(0): "running", reader: reader_state}, run_id=run(0))
    state.set(key(part(0)), ReadAhead(run(0), by=reader, claimed_at=NOW - age).to_dict())
    assert c.wait(part(0)) is None
    assert state.values == {}


def test_completing_a_claim_dropped_meanwhile_writes_nothing():
    c, state = claims({}, run_id=run(0))
    c.complete(part(3), make_plan(), "s")
    assert state.values == {}
    state.set(key(part(3)), ReadAhead(run(3), by=run(0), claimed_at=NOW).to_dict())
    c.complete(part(3), make_plan(), "s")
    assert ReadAhead.from_dict(state.values[key(part(3))]).adoptable(run(3), NOW)


def test_read_ahead_is_on_where_a_run_can_read_ahead_and_refused_where_it_cannot():
    assert pipeline().read_ahead == 16
    assert pipeline(read_ahead=3).read_ahead == 3
    assert pipeline(read_ahead=0).read_ahead == 0
    assert pipeline(tasks="separate").read_ahead == 0
    assert pipeline(spark={"runner": "local"}, tasks="combined").read_ahead == 16
    assert pipeline(spark={"runner": "local"}).read_ahead == 0  # separate by default there
    refused: list[tuple[dict[str, Any], str]] = [
        ({"tasks": "separate", "read_ahead": 4}, "needs tasks: combined"),
        ({"mode": "incremental", "schedule": None, "start_date": None, "max_active_runs": 1,
          "read_ahead": 2}, "needs mode: interval"),
        ({"spark": {"runner": "spark-submit"}, "tasks": "combined", "read_ahead": 2},
         "not possible with spark.runner spark-submit"),
        ({"read_ahead": -1}, "must be at least 0")]
    for fields, why in refused:
        with pytest.raises(ConfigError, match=f"read_ahead.*{why}"):
            pipeline(**fields)
