"""The Airflow api-server alone (no scheduler) over an existing metadata database, with
real logins (users admin and ops), for the Streamslice page test and benchmark."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from devtools.services import _venv_bin, free_port, stop_process

if TYPE_CHECKING:
    from collections.abc import Iterable

PASSWORDS = {"admin": "admin-pw", "ops": "ops-pw"}


def chromium_executable() -> str:
    """The Debian Chromium that Playwright drives (no browser download)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Chromium is missing: `make test` installs it (apt-get install chromium)"
    return exe


class ApiServer:
    def __init__(self, home: Path, dags_folder: str | os.PathLike[str],
                 limited_dags: Iterable[str]) -> None:
        self.port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        passwords = home / "passwords.json"
        passwords.write_text(json.dumps(PASSWORDS))
        root = Path(__file__).resolve().parents[1]
        self.env = dict(os.environ, **{
            "PYTHONPATH": os.pathsep.join([str(root / "plugins"), str(root)]),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__CORE__AUTH_MANAGER": "devtools.one_dag_auth.OneDagAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,ops:viewer",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "STREAMSLICE_TEST_LIMITED_USER": "ops",
            "STREAMSLICE_TEST_LIMITED_DAGS": ",".join(limited_dags)})
        self.log = home / "api-server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> Self:
        self.proc = proc = subprocess.Popen(
            [_venv_bin("airflow"), "api-server", "--host", "127.0.0.1", "--port",
             str(self.port)], env=self.env, stdout=open(self.log, "ab"),
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/api/v2/version", timeout=5)
                return self
            except urllib.error.HTTPError:
                return self  # up (it answered, even if only to refuse)
            except OSError:
                assert proc.poll() is None, f"api-server exited: {self.log.read_text()}"
                time.sleep(1)
        raise RuntimeError(f"the api-server did not start in {timeout}s: {self.log}")

    def token(self, user: str) -> str:
        req = urllib.request.Request(
            f"{self.url}/auth/token", method="POST",
            data=json.dumps({"username": user, "password": PASSWORDS[user]}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return str(json.loads(r.read())["access_token"])

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """(status, body) of a GET, with the user's bearer token when given."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        req = urllib.request.Request(f"{self.url}{path}", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def get_json(self, path: str, token: str | None = None) -> tuple[int, Any]:
        """(status, parsed JSON, or the text of an answer that is not JSON)."""
        status, body = self.get(path, token)
        return status, json.loads(body) if body.startswith(("{", "[")) else body

    def post(self, path: str, body: object, token: str | None = None,
             method: str = "POST") -> tuple[int, Any]:
        """(status, parsed JSON or text) of a JSON POST, with the user's bearer token."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(f"{self.url}{path}", method=method, headers=headers,
                                     data=json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def patch(self, path: str, body: object, token: str | None = None) -> tuple[int, Any]:
        return self.post(path, body, token, method="PATCH")

    def stop(self) -> None:
        stop_process(self.proc, 30)
