"""Settings Airflow imports by path ([database] sql_alchemy_connect_args) for test deployments
on SQLite: wait up to 30s for the single writer's lock instead of failing at once."""
from __future__ import annotations

SQLITE_CONNECT_ARGS = {"timeout": 30}
