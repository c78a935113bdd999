"""How `streamslice backfill` gets past a backfill that stands in its way, against a real
(SQLite) Airflow metadata database: a finished one is closed on the scheduler's own condition,
one with a run queued or running is never touched, an empty one is left alone while it may
still be being created, and an empty one a failed try of ours left behind is removed."""
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support.pipelines import kafka_pipeline, unique

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def now():
    """Taken when a test runs, not at import: a worker may collect this module minutes before
    it runs it, and a backfill 'created' at import time would already count as abandoned."""
    return datetime.now(timezone.utc)


def add_backfill(dag_id, run_states=(), created_at=None, starts=None):
    """A backfill row with one run (and its association) per state in ``run_states``, at
    ``starts`` (logical dates) when given."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.models.dag import DagModel
    from airflow.models.dagbundle import DagBundleModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    at = now()
    with create_session() as session:
        if session.get(DagBundleModel, "dags-folder") is None:
            session.add(DagBundleModel(name="dags-folder"))
            session.flush()
        if session.get(DagModel, dag_id) is None:
            session.add(DagModel(dag_id=dag_id, bundle_name="dags-folder"))
            session.flush()
        backfill = Backfill(dag_id=dag_id, from_date=at, to_date=at, dag_run_conf={},
                            max_active_runs=1, created_at=created_at or at)
        session.add(backfill)
        session.flush()
        for i, state in enumerate(run_states):
            start = starts[i] if starts else at - timedelta(days=backfill.id, hours=i + 1)
            run = DagRun(dag_id=dag_id, run_id=f"{dag_id}-{backfill.id}-{i}", logical_date=start,
                         run_after=start, data_interval=(start, start + timedelta(hours=1)),
                         state=state, run_type="backfill", backfill_id=backfill.id)
            session.add(run)
            session.flush()
            session.add(BackfillDagRun(backfill_id=backfill.id, dag_run_id=run.id,
                                       logical_date=start, sort_ordinal=i + 1))
        return backfill.id


def completed(backfill_id):
    from airflow.models.backfill import Backfill
    from airflow.utils.session import create_session
    with create_session() as session:
        backfill = session.get(Backfill, backfill_id)
        return "gone" if backfill is None else backfill.completed_at is not None


def test_only_a_finished_backfill_is_closed(airflow_db):
    from streamslice.airflow.backfill import _close_finished_backfills, _open_backfill_runs
    finished, dag_id = add_backfill(dag := unique("bf"), ["success", "failed"]), dag
    assert _close_finished_backfills(dag_id) == 1
    assert completed(finished) is True
    running = add_backfill(dag_id, ["success", "running"])
    queued = add_backfill(unique("bf"), ["queued"])
    assert _close_finished_backfills(dag_id) == 0
    assert completed(running) is False and completed(queued) is False
    assert _open_backfill_runs(dag_id) == 1


def test_an_empty_backfill_is_closed_only_once_airflow_counts_it_abandoned(airflow_db):
    from streamslice.airflow.backfill import _close_finished_backfills
    young = add_backfill(dag_id := unique("bf"))
    assert _close_finished_backfills(dag_id) == 0 and completed(young) is False
    old = add_backfill(other := unique("bf"), created_at=now() - timedelta(minutes=3))
    assert _close_finished_backfills(other) == 1 and completed(old) is True


def test_the_empty_backfill_a_failed_try_left_is_removed(airflow_db):
    from streamslice.airflow.backfill import _drop_empty_backfills
    dag_id, start = unique("bf"), now()
    earlier = add_backfill(dag_id, created_at=start - timedelta(seconds=30))
    with_runs = add_backfill(dag_id, ["success"])
    ours = add_backfill(dag_id)
    assert _drop_empty_backfills(dag_id, start - timedelta(seconds=5)) == 1
    assert completed(ours) == "gone"
    assert completed(earlier) is False and completed(with_runs) is False


def test_the_intervals_a_backfill_made_half_way_does_not_hold(airflow_db):
    """A plain ``airflow backfill create`` failing half-way on SQLite can leave a backfill
    holding its first intervals only; the wrapper asks which of its intervals the latest
    backfill made since its first try holds neither a run nor a reason not to make one for."""
    from airflow.models.backfill import Backfill, BackfillDagRun
    from airflow.utils.session import create_session

    from streamslice.airflow.backfill import _uncovered
    from streamslice.errors import StreamsliceError
    from streamslice.planning.plan import Interval
    from streamslice.timestamps import from_ms
    hour, t0 = 3_600_000, 1_714_521_600_000
    intervals = [Interval(t0 + h * hour, t0 + (h + 1) * hour) for h in range(4)]
    dag_id, first_try = unique("bf"), now()
    earlier = add_backfill(dag_id, ["failed", "success", "failed", "failed"],
                           created_at=first_try - timedelta(minutes=5),
                           starts=[from_ms(iv.start) for iv in intervals])
    with create_session() as session:
        half = Backfill(dag_id=dag_id, from_date=from_ms(t0), to_date=from_ms(t0 + 3 * hour),
                        dag_run_conf={}, max_active_runs=1, created_at=now())
        session.add(half)
        session.flush()
        rows = session.query(BackfillDagRun).filter_by(backfill_id=earlier).order_by(
            BackfillDagRun.sort_ordinal).all()
        session.add(BackfillDagRun(backfill_id=half.id, dag_run_id=rows[0].dag_run_id,
                                   logical_date=rows[0].logical_date, sort_ordinal=1))
        session.add(BackfillDagRun(backfill_id=half.id, dag_run_id=None,
                                   logical_date=rows[1].logical_date, sort_ordinal=2,
                                   exception_reason="already exists"))
    assert _uncovered(dag_id, intervals, first_try) == intervals[2:]
    # the latest counts: the earlier one, whole, is an older backfill's record
    assert _uncovered(dag_id, intervals, first_try - timedelta(minutes=10)) == intervals[2:]
    with pytest.raises(StreamsliceError, match="no backfill of .* created since"):
        _uncovered(unique("bf"), intervals, first_try)


def add_run(dag_id, logical, interval_start, run_type="manual"):
    """A finished run dated ``logical`` that read the hour from ``interval_start``."""
    from airflow.models.dag import DagModel
    from airflow.models.dagbundle import DagBundleModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    with create_session() as session:
        if session.get(DagBundleModel, "dags-folder") is None:
            session.add(DagBundleModel(name="dags-folder"))
            session.flush()
        if session.get(DagModel, dag_id) is None:
            session.add(DagModel(dag_id=dag_id, bundle_name="dags-folder", is_paused=True))
            session.flush()
        session.add(DagRun(dag_id=dag_id, run_id=f"{run_type}__{logical.isoformat()}",
                           logical_date=logical, run_after=logical, state=DagRunState.SUCCESS,
                           data_interval=(interval_start, interval_start + timedelta(hours=1)),
                           run_type=run_type))


def test_a_manual_run_holding_an_intervals_logical_date_is_named_before_a_backfill(
        airflow_db, tmp_path):
    """``airflow dags test DAG 01:00`` makes a manual run of 00:00-01:00 dated 01:00, the
    logical date the 01:00-02:00 interval's run needs: Airflow's backfill then never makes
    that run, and a backfill waiting for it waited for ever. Refused at once, naming the run;
    one dated inside the next hour (01:30, as getting started dates it) holds no such date."""
    from streamslice.airflow.backfill import backfill
    from streamslice.errors import ConfigError
    utc = timezone.utc
    held = kafka_pipeline("127.0.0.1:1", "t", name=unique("held"), folder=tmp_path / "p",
                          mode="interval", schedule="@hourly",
                          start_date="2024-05-01T00:00:00Z", output=tmp_path)
    add_run(held.name, datetime(2024, 5, 1, 1, tzinfo=utc), datetime(2024, 5, 1, 0, tzinfo=utc))
    t1, t3 = 1_714_525_200_000, 1_714_532_400_000  # 2024-05-01 01:00 and 03:00 UTC
    with pytest.raises(ConfigError) as err:
        backfill(held, t1, t3, wait=False)
    assert str(err.value) == (
        f"run manual__2024-05-01T01:00:00+00:00 of {held.name} is dated "
        "2024-05-01T01:00:00.000Z but reads the interval from 2024-05-01T00:00:00.000Z: it "
        "holds the logical date that the interval 2024-05-01T01:00:00.000Z → "
        "2024-05-01T02:00:00.000Z needs, so Airflow cannot make that interval's run. Delete "
        f"that run (the Airflow UI, or DELETE /api/v2/dags/{held.name}/dagRuns/RUN_ID) and "
        "backfill again; date manual runs inside an interval, not at its start")
    inside = kafka_pipeline("127.0.0.1:1", "t", name=unique("inside"), folder=tmp_path / "p",
                            mode="interval", schedule="@hourly",
                            start_date="2024-05-01T00:00:00Z", output=tmp_path)
    add_run(inside.name, datetime(2024, 5, 1, 1, 30, tzinfo=utc),
            datetime(2024, 5, 1, 0, tzinfo=utc))
    with pytest.raises(ConfigError, match="is paused"):  # the next check: nothing held
        backfill(inside, t1, t3, wait=False)


@pytest.mark.parametrize("own, manual", [("failed", "running"), ("running", "failed")])
def test_a_backfill_follows_its_own_runs_not_a_manual_run_of_the_same_interval(airflow_db,
                                                                               own, manual):
    """An operator's manual run of an interval the backfill is running (its data interval
    the same, its logical date another) neither answers for the backfill's run nor hides it."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    from streamslice.airflow.backfill import _states
    from streamslice.timestamps import from_ms
    hour, t0 = 3_600_000, 1_714_521_600_000
    dag_id = unique("bf")
    add_backfill(dag_id, [own, "success"], starts=[from_ms(t0), from_ms(t0 + hour)])
    with create_session() as session:
        at = from_ms(t0 + 30 * 60_000)
        session.add(DagRun(dag_id=dag_id, run_id=f"manual__{dag_id}", logical_date=at,
                           run_after=at, data_interval=(from_ms(t0), from_ms(t0 + hour)),
                           state=manual, run_type="manual"))
    assert _states(dag_id, [t0, t0 + hour]) == {t0: own, t0 + hour: "success"}


def test_a_backfill_create_failing_half_way_commits_no_run_unlike_airflows_own(airflow_db):
    """Airflow's ``backfill create`` on SQLite commits each run it clears or makes (a savepoint
    that begins the transaction commits it on release), so a failure at the third of four
    intervals leaves the first two taken over by a backfill and the others as they were: a
    ``--reprocess failed`` re-run then ran half its intervals. ``backfill_create``, as a command
    and as the wrapper creates in its own process, commits them together: the same failure
    leaves every run as it was. The
    failure is a trigger in the metadata database, where SQLite's lock would strike."""
    from airflow.configuration import conf

    from streamslice.airflow.backfill import _backfill_create
    cfg = kafka_pipeline("127.0.0.1:1", "t", name=unique("bf_half"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    airflow = str(Path(sys.executable).parent / "airflow")
    plain = [airflow, "backfill", "create"]
    ours = [sys.executable, "-m", "streamslice.airflow.backfill_create"]

    def run(cmd, *args):
        return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True,
                              timeout=300)

    assert run([airflow, "dags", "reserialize"]).returncode == 0
    create = ["--dag-id", cfg.name, "--from-date", "2024-05-01T00:00:00+00:00", "--to-date",
              "2024-05-01T03:00:00+00:00", "--max-active-runs", "1"]
    out = run(plain, *create, "--reprocess-behavior", "completed")
    assert out.returncode == 0, out.stderr[-2000:]
    db = sqlite3.connect(conf.get("database", "sql_alchemy_conn").removeprefix("sqlite:///"),
                         timeout=30)

    def failed_runs_then_refuse_the_third():
        """Four failed runs, their backfills closed, and the third's take-over refused."""
        with db:
            db.execute("UPDATE dag_run SET state = 'failed' WHERE dag_id = ?", (cfg.name,))
            db.execute("UPDATE backfill SET completed_at = CURRENT_TIMESTAMP "
                       "WHERE dag_id = ? AND completed_at IS NULL", (cfg.name,))
            db.execute("DROP TRIGGER IF EXISTS refuse_third")
            db.execute(f"CREATE TRIGGER refuse_third BEFORE UPDATE OF backfill_id ON dag_run "
                       f"WHEN NEW.dag_id = '{cfg.name}' AND NEW.logical_date LIKE "
                       f"'2024-05-01 02:00:00%' BEGIN SELECT RAISE(ABORT, 'refused'); END")

    def states_after(cmd):
        failed_runs_then_refuse_the_third()
        if cmd is None:  # what streamslice backfill does, in its own process
            error = _backfill_create(cfg.name, datetime(2024, 5, 1, tzinfo=timezone.utc),
                                     datetime(2024, 5, 1, 3, tzinfo=timezone.utc), "failed", 1)
            assert error is not None and "refused" in error, error
        else:
            out = run(cmd, *create, "--reprocess-behavior", "failed")
            assert out.returncode != 0 and "refused" in out.stderr, out.stderr[-2000:]
        return [(date[11:16], state) for date, state in db.execute(
            "SELECT logical_date, state FROM dag_run WHERE dag_id = ? ORDER BY logical_date",
            (cfg.name,))]

    try:
        assert states_after(plain) == [("00:00", "queued"), ("01:00", "queued"),
                                       ("02:00", "failed"), ("03:00", "failed")]
        assert states_after(ours) == [(f"0{h}:00", "failed") for h in range(4)]
        assert states_after(None) == [(f"0{h}:00", "failed") for h in range(4)]
    finally:
        with db:
            db.execute("DROP TRIGGER IF EXISTS refuse_third")
        db.close()  # a connection left open kept a lock the module's next writer met

