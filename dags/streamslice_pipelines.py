"""streamslice: one DAG per pipeline file in dags/pipelines/."""
from pathlib import Path

from streamslice.airflow.factory import build_dags

globals().update(build_dags(Path(__file__).parent / "pipelines"))
