"""How `streamslice backfill` gets past a backfill that stands in its way, against a real
(SQLite) Airflow metadata database: a finished one is closed on the scheduler's own condition,
one with a run queued or running is never touched, an empty one is left alone while it may
still be being created, and an empty one a failed try of ours left behind is removed."""
from datetime import datetime, timedelta, timezone

import pytest

from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


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
    from streamslice.timeutil import from_ms
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
