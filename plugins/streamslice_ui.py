"""Airflow plugin: the Streamslice page in the Airflow UI (defined in the Airflow glue)."""
from streamslice.airflow.ui import StreamslicePlugin

__all__ = ["StreamslicePlugin"]
