"""One run of a pipeline's DAG through Airflow (``dag.test()``: the real task callables) in a
process of its own, as an Airflow worker runs it; prints the run's state, its wall time and
each task's duration as one JSON line. Used by tests that run intervals side by side and by
``bench/run_overhead.py``.

  python -m devtools.dag_run PIPELINE.yaml [LOGICAL_DATE] [--noop]

``--noop`` runs the pipeline's DAG with tasks that do nothing: what Airflow itself costs.
"""
from __future__ import annotations

import json
import sys
import time


def main(pipeline_file: str, logical_date: str | None = None, noop: bool = False) -> int:
    started = time.monotonic()
    from datetime import datetime

    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    dag = build_dag(load_pipeline(pipeline_file))
    if noop:
        for task in dag.tasks:
            task.python_callable = _nothing
    kwargs = {"logical_date": datetime.fromisoformat(logical_date)} if logical_date else {}
    ran = time.monotonic()
    run = dag.test(**kwargs)
    done = time.monotonic()
    tasks = {ti.task_id: {"state": str(ti.state), "seconds": ti.duration,
                          "start": ti.start_date.timestamp() if ti.start_date else None,
                          "end": ti.end_date.timestamp() if ti.end_date else None}
             for ti in run.get_task_instances()}
    print(json.dumps({"state": str(run.state), "run_id": run.run_id,
                      "process_seconds": done - started, "dag_test_seconds": done - ran,
                      "tasks": tasks}), flush=True)
    return 0 if str(run.state) == "success" else 1


def _nothing(*args: object, **kwargs: object) -> None:
    return None


if __name__ == "__main__":
    path, *date = [a for a in sys.argv[1:] if a != "--noop"]
    sys.exit(main(path, date[0] if date else None, noop="--noop" in sys.argv[1:]))
