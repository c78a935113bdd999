"""A test auth manager: Airflow's SimpleAuthManager, except that the user named in
``STREAMSLICE_TEST_LIMITED_USER`` may read only the DAGs listed (comma-separated) in
``STREAMSLICE_TEST_LIMITED_DAGS`` — the per-DAG limit an operator would set up in FAB or
Keycloak, so the UI test and benchmark can check that the Streamslice page asks Airflow per DAG."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

if TYPE_CHECKING:
    from airflow.api_fastapi.auth.managers.base_auth_manager import ResourceMethod
    from airflow.api_fastapi.auth.managers.models.resource_details import (
        DagAccessEntity,
        DagDetails,
    )
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser


class OneDagAuthManager(SimpleAuthManager):
    def is_authorized_dag(self, *, method: ResourceMethod, user: SimpleAuthManagerUser,
                          access_entity: DagAccessEntity | None = None,
                          details: DagDetails | None = None) -> bool:
        if user.get_name() == os.environ.get("STREAMSLICE_TEST_LIMITED_USER"):
            allowed = os.environ.get("STREAMSLICE_TEST_LIMITED_DAGS", "").split(",")
            if details is None or details.id not in allowed:
                return False
        return super().is_authorized_dag(method=method, user=user,
                                         access_entity=access_entity, details=details)
