"""Airflow plugin: the Streamslice page in the Airflow UI (Browse → Streamslice)."""
from airflow.plugins_manager import AirflowPlugin

from streamslice.airflow.ui import plugin_attributes


class StreamslicePlugin(AirflowPlugin):
    name = "streamslice"
    fastapi_apps = plugin_attributes()["fastapi_apps"]
    external_views = plugin_attributes()["external_views"]
