"""``streamslice backfill`` creating its backfill when SQLite's lock fails a try after the try
committed its runs: the retry meets Airflow's AlreadyRunningBackfill for a backfill that is
its own, which it follows, while a backfill someone else has running is still refused; and a
backfill holding only some of the intervals (what a plain ``airflow backfill create`` failing
half-way on SQLite leaves) is followed, then one made for the rest. Airflow is faked here (its
``backfill create`` and the metadata queries), to cover our own decisions only; the
real scheduler runs them in tests/chaos/test_backfill_kill.py. Last, on a real SQLite file,
why ``backfill_create`` begins its transactions itself: a savepoint is otherwise a commit."""
import sqlite3
import time
from contextlib import nullcontext
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from streamslice.airflow import backfill as bf
from streamslice.airflow.backfill_create import begin_immediate
from streamslice.errors import StreamsliceError
from streamslice.planning.plan import Interval

LOCKED = "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked"
RUNNING = "airflow.exceptions.AlreadyRunningBackfill: Another backfill is running for dag x"


def fake_airflow(monkeypatch, answers, open_runs) -> list[datetime]:
    """``airflow backfill create`` fails with these errors in turn; ``open_runs(created_since)``
    fakes the count of queued or running runs of the DAG's open backfills."""
    tries: list[datetime] = []

    def backfill_create(*args):
        tries.append(datetime.now(timezone.utc))
        return answers[len(tries) - 1]

    monkeypatch.setattr(bf, "_backfill_create", backfill_create)
    monkeypatch.setattr(bf, "_uncovered", lambda dag_id, intervals, since: [])
    monkeypatch.setattr(bf, "_open_backfill_runs", lambda dag_id, since=None: open_runs(since))
    monkeypatch.setattr(time, "sleep", lambda s: None)
    return tries


def create(said):
    bf._create("x", [Interval(0, 3_600_000)], "completed", 4, said.append)


def test_a_try_that_failed_on_the_lock_after_creating_its_runs_is_followed(monkeypatch):
    tries: list[datetime]  # the fake's answer below counts runs made since the first try
    tries = fake_airflow(monkeypatch, [LOCKED, RUNNING],
                         lambda since: 2 if since is None or since <= tries[0] else 0)
    said: list[str] = []
    create(said)
    assert len(tries) == 2
    assert said[-1] == ("backfill x: the metadata database was busy, but the try created its "
                        "runs; following them")


@pytest.mark.parametrize("answers", [[RUNNING], [LOCKED, RUNNING]])
def test_another_running_backfill_is_refused(monkeypatch, answers):
    # an older backfill with runs in flight: none created since our first try
    fake_airflow(monkeypatch, answers, lambda since: 2 if since is None else 0)
    with pytest.raises(StreamsliceError, match=r"another backfill of x is still running "
                                               r"\(2 runs queued or running\)"):
        create([])


HOUR = 3_600_000


def test_a_backfill_holding_only_some_intervals_is_followed_then_one_made_for_the_rest(
        monkeypatch):
    # Four intervals whose runs an earlier backfill left failed (a --reprocess failed re-run);
    # the first backfill made holds only the first two, as one whose creation failed half-way
    # and whose clean-up failed too. Counting the other two's old runs as its outcome is what
    # made a re-run report 'failed' with every interval exact.
    intervals = [Interval(h * HOUR, (h + 1) * HOUR) for h in range(4)]
    db = dict.fromkeys((iv.start for iv in intervals), "failed")
    created: list[list[int]] = []
    closed: list[str] = []
    said: list[str] = []

    def create(dag_id, todo, reprocess, max_active_runs, say):
        created.append([iv.start // HOUR for iv in todo])
        held = todo[:2] if len(created) == 1 else todo
        db.update(dict.fromkeys((iv.start for iv in held), "queued"))
        return todo[len(held):]

    def states(dag_id, starts):  # the scheduler: each poll, a queued run ends
        queued = [s for s in starts if db[s] == "queued"]
        if queued:
            db[queued[0]] = "success"
        return {s: db[s] for s in starts}

    monkeypatch.setattr(bf, "_create", create)
    monkeypatch.setattr(bf, "_states", states)
    monkeypatch.setattr(bf, "_close_finished_backfills", closed.append)
    runs = bf._run("x", intervals, "failed", 1, wait=True, poll_s=0, timeout_s=60,
                   on_progress=None, say=said.append)
    assert runs == dict.fromkeys((iv.start for iv in intervals), "success")
    assert created == [[0, 1, 2, 3], [2, 3]]
    assert closed == ["x", "x"]  # the first closed before the second is made
    assert said == ["backfill x: the backfill holds 2 of the 4 intervals (creating it failed "
                    "half-way); following them, then creating one for the other 2"]


def test_without_waiting_a_backfill_holding_only_some_intervals_is_an_error(monkeypatch):
    intervals = [Interval(h * HOUR, (h + 1) * HOUR) for h in range(3)]
    monkeypatch.setattr(bf, "_create", lambda dag_id, todo, *a: todo[2:])
    with pytest.raises(StreamsliceError, match=r"the backfill of x holds 2 of its 3 intervals "
                       r"\(creating it failed half-way\): run the same command again from "
                       r"1970-01-01T02:00:00"):
        bf._run("x", intervals, "failed", 1, wait=False, poll_s=0, timeout_s=60,
                on_progress=None, say=None)


@pytest.mark.parametrize("immediate", [False, True])
def test_savepoints_commit_on_sqlite_unless_the_transaction_is_begun_for_them(tmp_path,
                                                                             immediate):
    """Airflow's backfill create makes each run in a savepoint after committing the backfill:
    with Python's sqlite3 beginning transactions itself, the savepoint begins one and its
    release commits it, so a later failure cannot undo the runs made before it."""
    engine = sa.create_engine(f"sqlite:///{tmp_path}/db", connect_args={"timeout": 0.1})
    if immediate:
        sa.event.listen(engine, "begin", begin_immediate)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE run (n INTEGER)")
    session = Session(engine)
    session.execute(sa.text("INSERT INTO run VALUES (0)"))
    session.commit()  # the backfill row, committed first
    session.execute(sa.text("SELECT n FROM run")).all()
    for n in (1, 2):  # each run in a savepoint of its own
        with session.begin_nested():
            session.execute(sa.text(f"INSERT INTO run VALUES ({n})"))
    other = sqlite3.connect(f"{tmp_path}/db", timeout=0.1)
    with pytest.raises(sqlite3.OperationalError, match="database is locked") \
            if immediate else nullcontext():
        other.execute("INSERT INTO run VALUES (9)")  # the scheduler, writing meanwhile
        other.commit()
    session.rollback()  # the failure, then: only what was committed before the runs stays
    with engine.connect() as conn:
        kept = [n for (n,) in conn.exec_driver_sql("SELECT n FROM run ORDER BY n")]
    assert kept == ([0] if immediate else [0, 1, 2, 9])


def test_what_airflow_prints_while_creating_stays_out_of_the_commands_output(capfd):
    """Airflow's loggers print to standard output, some through a stream they bound before
    (structlog's), so ``streamslice backfill --json`` printed Airflow's lines before its JSON
    once the backfill was created in its own process. What is written to file descriptors 1
    and 2 meanwhile is captured, as another process's output was, and handed back."""
    import os

    from streamslice.airflow.backfill_create import captured_output

    with open(1, "w", closefd=False) as bound:  # a logger's stream on standard output
        print("before", file=bound, flush=True)
        with captured_output() as printed:
            print("a line a run", file=bound, flush=True)
            os.write(2, b"a warning\n")
            assert printed() == "a line a run\na warning\n"
        print("after", file=bound, flush=True)
    assert capfd.readouterr() == ("before\nafter\n", "")
