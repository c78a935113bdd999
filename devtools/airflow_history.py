"""A streamslice DAG's run history written straight into Airflow's metadata database, shaped
exactly as its commit task writes it: the DAG run, the commit's asset event whose extra is
``tasks.run_metrics`` of a manifest, and the checkpoint in the output asset's state. For the
page's benchmark (10,000 runs) and the UI test's 300-partition pipeline, where reading every
run through Spark would take minutes (each split is a Spark task). The DAG must already be
serialized (its asset registered)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Literal


def commit_extra(records: int, lag_by_split: dict[str, int], *,
                 lag_unit: Literal["records", "ms"] = "records", late_records: int = 0,
                 partition: str = "",
                 positions: dict[str, Any] | None = None, batch: int | None = None,
                 dead_letters: int = 0) -> dict[str, Any]:
    """The asset event's extra of a run that published ``records`` with this lag per split."""
    from streamslice.airflow.tasks import run_metrics
    from streamslice.commit.manifest import Manifest
    from streamslice.reading.stats import SplitSummary
    splits = [SplitSummary(i, k, None, None, lag=v, lag_unit=lag_unit)
              for i, (k, v) in enumerate(lag_by_split.items())]
    manifest = Manifest(pipeline="history", source="-", mode="-", partition=partition,
                        plan_id="history", run_id=None, committed_at=None, records=records,
                        dead_letters=dead_letters, dead_letter_uri=None,
                        late_records=late_records, min_timestamp=None, max_timestamp=None,
                        interval=None, batch=batch, gaps=[], splits=splits)
    return run_metrics(manifest, positions).to_dict()


class History:
    """Adds runs to one DAG; ``flush()`` every few thousand, ``close()`` at the end."""

    def __init__(self, dag_id: str) -> None:
        from airflow.models.asset import AssetModel
        from airflow.utils.session import create_session
        from sqlalchemy import select
        self.dag_id = dag_id
        self._cm = create_session()
        self.session = self._cm.__enter__()
        self.asset_id = self.session.scalar(select(AssetModel.id).where(
            AssetModel.name == f"streamslice/{dag_id}"))
        assert self.asset_id is not None, f"{dag_id}'s asset is not registered"

    def run(self, *, start: datetime, end: datetime, state: str = "success",
            extra: dict[str, Any] | None = None, run_type: str = "scheduled",
            ran_at: datetime | None = None) -> str:
        """One run of the interval ``[start, end)`` (an incremental batch: its run time),
        dated as the scheduler dates it; ``extra`` (``commit_extra``) when it published."""
        from airflow.models.asset import AssetEvent
        from airflow.models.dagrun import DagRun
        from airflow.utils.state import DagRunState
        ran_at = ran_at or end + timedelta(minutes=1)
        run_id = f"{run_type}__{start.isoformat()}"
        run = DagRun(dag_id=self.dag_id, run_id=run_id, logical_date=start,
                     data_interval=(start, end), run_after=ran_at, start_date=ran_at,
                     run_type=run_type, state=DagRunState(state))
        run.end_date = ran_at + timedelta(seconds=30)
        self.session.add(run)
        if extra is not None:
            self.session.add(AssetEvent(asset_id=self.asset_id, extra=extra,
                                        source_dag_id=self.dag_id, source_run_id=run_id,
                                        source_task_id="commit",
                                        timestamp=ran_at + timedelta(seconds=30)))
        return run_id

    def checkpoint(self, value: dict[str, Any]) -> None:
        from airflow.state import AssetScope, get_state_backend
        get_state_backend().set(AssetScope(asset_id=self.asset_id), "checkpoint",
                                json.dumps(value), session=self.session)

    def flush(self) -> None:
        self.session.flush()

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
