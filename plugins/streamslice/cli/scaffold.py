"""``streamslice init [DIR]``: what an Airflow DAGs folder needs once the package is installed.

The UI page and the provider metadata come with the package (entry points); the DAGs folder
needs only the factory call (one DAG per pipeline file) and a ``pipelines/`` folder. The
example pipeline validates as written, so ``streamslice validate`` right after ``init``
passes, and its comments name the fields a first pipeline changes. Files that exist are
kept, never overwritten.
"""
from __future__ import annotations

import os
from pathlib import Path

DAG_FILE = "streamslice_pipelines.py"
EXAMPLE = "pipelines/example_events.yaml"

DAG_TEXT = '''\
"""streamslice: one DAG per pipeline file in dags/pipelines/."""
from pathlib import Path

from streamslice.airflow.factory import build_dags

globals().update(build_dags(Path(__file__).parent / "pipelines"))
'''

EXAMPLE_TEXT = '''\
# An example pipeline: one file = one Airflow DAG, named after the file (example_events).
# Copy it for each topic or stream; `streamslice validate` checks every file in this folder.
description: Hourly slices of the events topic, by the records' timestamps.
mode: interval                 # interval: each run reads one schedule interval's records;
                               # incremental: from the checkpoint to the tip at plan time
schedule: "@hourly"            # cron, preset, or a duration such as 15m
start_date: "2026-01-01T00:00:00Z"
catchup: false                 # true: Airflow runs every interval since start_date
kafka:
  # The brokers, or conn_id: an Airflow connection whose extra holds client properties.
  bootstrap_servers: ${KAFKA_BOOTSTRAP_SERVERS:-localhost:9092}
  topics: [events]             # or topic_pattern: "events-.*"
format:
  value: json                  # raw | string | json | avro | protobuf | json_schema
  key: string
  schema: "id BIGINT, kind STRING, amount DOUBLE"   # Spark DDL; fields become columns
output:
  path: output                 # relative to the folder above dags/, absolute, or s3://…
  format: parquet              # parquet | json | orc | iceberg | delta
'''


def default_dags_folder() -> Path:
    """Airflow's: ``AIRFLOW__CORE__DAGS_FOLDER``, else ``$AIRFLOW_HOME/dags`` (``~/airflow``
    when unset, as Airflow defaults)."""
    configured = os.environ.get("AIRFLOW__CORE__DAGS_FOLDER")
    if configured:
        return Path(configured)
    return Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow") / "dags"


def init(folder: Path) -> list[tuple[Path, bool]]:
    """Write the DAG file and the example pipeline into ``folder``; (path, written) each,
    ``written`` False for a file that was already there and was kept."""
    done = []
    for name, text in ((DAG_FILE, DAG_TEXT), (EXAMPLE, EXAMPLE_TEXT)):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            done.append((path, False))
            continue
        done.append((path, True))
    return done
