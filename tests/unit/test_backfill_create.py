"""``streamslice backfill`` creating its backfill when SQLite's lock fails a try after the try
committed its runs: the retry meets Airflow's AlreadyRunningBackfill for a backfill that is
its own, which it follows, while a backfill someone else has running is still refused. Airflow
is faked here (the ``airflow backfill create`` process and the metadata queries), to cover our
own decision only; the real scheduler runs it in tests/chaos/test_backfill_kill.py."""
import subprocess
from datetime import datetime, timezone

import pytest

from streamslice.airflow import backfill as bf
from streamslice.errors import StreamsliceError
from streamslice.planning.plan import Interval

LOCKED = "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked"
RUNNING = "airflow.exceptions.AlreadyRunningBackfill: Another backfill is running for dag x"


def fake_airflow(monkeypatch, answers, open_runs):
    """``airflow backfill create`` answers in turn; ``open_runs(created_since)`` fakes the
    count of queued or running runs of the DAG's open backfills."""
    tries = []

    def airflow(*args, check=True):
        tries.append(datetime.now(timezone.utc))
        return subprocess.CompletedProcess(args, 1, "", answers[len(tries) - 1])

    monkeypatch.setattr(bf, "_airflow", airflow)
    monkeypatch.setattr(bf, "_open_backfill_runs", lambda dag_id, since=None: open_runs(since))
    monkeypatch.setattr(bf.time, "sleep", lambda s: None)
    return tries


def create(said):
    bf._create("x", [Interval(0, 3_600_000)], "completed", 4, said.append)


def test_a_try_that_failed_on_the_lock_after_creating_its_runs_is_followed(monkeypatch):
    tries = fake_airflow(monkeypatch, [LOCKED, RUNNING],
                         lambda since: 2 if since is None or since <= tries[0] else 0)
    said = []
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
