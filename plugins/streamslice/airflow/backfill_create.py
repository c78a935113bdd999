"""``airflow backfill create`` whose runs are committed all together or not at all, also on
SQLite: what ``streamslice backfill`` does in its own process (``create``), and a command
(``python -m streamslice.airflow.backfill_create ARGS…`` takes the arguments of ``airflow
backfill create``).

Python's sqlite3 module (before 3.12's ``autocommit=False``) begins a transaction only before
a write, so on SQLite SQLAlchemy's SAVEPOINT is what begins one, and its RELEASE, the
outermost savepoint's, commits it. Airflow creates or clears each run of a backfill in a
savepoint of its own, so a ``backfill create`` that fails half-way (SQLite's "database is
locked") has committed the runs before the failure: its clean-up then deletes those runs,
an earlier backfill's cleared runs among them, or, when the clean-up fails the same way,
leaves a backfill holding only the first intervals while the others keep their earlier
state, failed ones failed. Begun by ``BEGIN IMMEDIATE`` instead (SQLAlchemy's documented
recipe for pysqlite), every transaction is one: savepoints nest in it, and it holds the
write lock from its start, waiting for it up to the connection's timeout rather than
failing when another writer (the scheduler) commits between its read and its write.
Other databases are left as they are."""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from datetime import datetime


def begin_immediate(conn: Any) -> None:
    """SQLAlchemy ``begin`` listener: on SQLite, begin the transaction ourselves, for writing."""
    if conn.dialect.name != "sqlite":
        return
    dbapi = conn.connection.dbapi_connection
    if dbapi.isolation_level is not None:
        dbapi.isolation_level = None  # sqlite3 then begins and commits nothing on its own
    conn.exec_driver_sql("BEGIN IMMEDIATE")


@contextmanager
def immediate_transactions() -> Iterator[None]:
    """While in it, every engine of this process (Airflow's among them) begins its SQLite
    transactions with ``BEGIN IMMEDIATE``: for the writes of a backfill's creation, not for
    a process's later reads, which must not take SQLite's write lock."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    added = not event.contains(Engine, "begin", begin_immediate)
    if added:
        event.listen(Engine, "begin", begin_immediate)
    try:
        yield
    finally:
        if added:
            event.remove(Engine, "begin", begin_immediate)


@contextmanager
def captured_output() -> Iterator[Callable[[], str]]:
    """What this process writes to its standard output and error for a while (file
    descriptors 1 and 2, so also through a logger that bound ``sys.stdout`` before) goes to a
    temporary file instead, as another process's would be captured; the function yielded
    returns what was written so far."""
    with tempfile.TemporaryFile("w+") as printed:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(printed.fileno(), 1)
        os.dup2(printed.fileno(), 2)

        def text() -> str:
            sys.stdout.flush()
            sys.stderr.flush()
            printed.seek(0)
            return printed.read()

        try:
            yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, was in zip((1, 2), saved):
                os.dup2(was, fd)
                os.close(was)


def create(dag_id: str, from_date: datetime, to_date: datetime, reprocess: str,
           max_active_runs: int) -> None:
    """What ``airflow backfill create --dag-id … --from-date … --to-date …
    --reprocess-behavior … --max-active-runs …`` does, its runs committed together: in this
    process, which has imported Airflow already (another process would import it again, about
    2 CPU s). Raises what Airflow raises (``AlreadyRunningBackfill``, SQLite's "database is
    locked", …)."""
    from airflow.api_fastapi.common.dagbag import resolve_run_on_latest_version
    from airflow.models.backfill import ReprocessBehavior, _create_backfill
    from airflow.utils.platform import getuser
    from airflow.utils.session import create_session
    with create_session() as session:
        latest = resolve_run_on_latest_version(None, dag_id, session, fallback=True)
    with immediate_transactions():
        _create_backfill(dag_id=dag_id, from_date=from_date, to_date=to_date,
                         max_active_runs=max_active_runs, reverse=False, dag_run_conf=None,
                         triggering_user_name=getuser(),
                         reprocess_behavior=ReprocessBehavior(reprocess),
                         run_on_latest_version=latest)


def main(argv: list[str] | None = None) -> None:
    from airflow.__main__ import main as airflow_main
    sys.argv = ["airflow", "backfill", "create", *(sys.argv[1:] if argv is None else argv)]
    with immediate_transactions():
        airflow_main()  # type: ignore[no-untyped-call]  # Airflow's main() is unannotated


if __name__ == "__main__":
    main()
