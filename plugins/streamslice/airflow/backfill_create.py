"""``airflow backfill create`` whose runs are committed all together or not at all, also on
SQLite: what ``streamslice backfill`` runs (``python -m streamslice.airflow.backfill_create
ARGS…`` takes the arguments of ``airflow backfill create``).

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

import sys
from typing import Any


def begin_immediate(conn: Any) -> None:
    """SQLAlchemy ``begin`` listener: on SQLite, begin the transaction ourselves, for writing."""
    if conn.dialect.name != "sqlite":
        return
    dbapi = conn.connection.dbapi_connection
    if dbapi.isolation_level is not None:
        dbapi.isolation_level = None  # sqlite3 then begins and commits nothing on its own
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def real_sqlite_transactions() -> None:
    """Every engine of this process (Airflow's among them) begins its SQLite transactions
    with ``BEGIN IMMEDIATE``; meant for a short process that writes, not for a server."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    if not event.contains(Engine, "begin", begin_immediate):
        event.listen(Engine, "begin", begin_immediate)


def main(argv: list[str] | None = None) -> None:
    real_sqlite_transactions()
    from airflow.__main__ import main as airflow_main
    sys.argv = ["airflow", "backfill", "create", *(sys.argv[1:] if argv is None else argv)]
    airflow_main()


if __name__ == "__main__":
    main()
