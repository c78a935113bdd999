"""A local Confluent Schema Registry: the documented REST subset that the confluent-kafka
client and its Avro/Protobuf/JSON Schema serializers use, for the tests and the demo.

    POST   /subjects/{subject}/versions       register (same schema, same id; ids are global)
    POST   /subjects/{subject}                look a schema up under a subject
    GET    /subjects, /subjects/{subject}/versions, /subjects/{subject}/versions/{v|latest}
    GET    /schemas/ids/{id}, /schemas/guids/{guid}, /schemas/types
    DELETE /subjects/{subject}
    GET    /config, PUT /config/{subject}      (stored, not enforced)

Errors are the registry's own JSON ({"error_code": 40403, "message": …}). Options: basic auth
(``--user name:password``), TLS (``--cert``/``--key``), a file that keeps the schemas across
restarts (``--data``), and, for tests, ``PUT /_devtools/faults {"delay_s": 2, "status": 503}``
to make every other request slow or failing. The server stores schema strings as given
(the Protobuf serializer registers a base64 descriptor, which is what ``format=serialized``
returns); it checks no compatibility. Test and demo tooling; listens on 127.0.0.1.

    python -m devtools.schema_registry --port 8081
"""
from __future__ import annotations

import argparse
import base64
import json
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

TYPES = ["AVRO", "JSON", "PROTOBUF"]
Body = Any  # a request's JSON, as the client sent it: each route checks what it reads
Route = Callable[..., object]  # (store, query, body, *the path's groups) -> the answer's JSON


class Store:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else None
        self.lock = threading.Lock()
        # index = id - 1: {"schema", "schemaType", "references", "guid"}
        self.schemas: list[dict[str, Any]] = []
        self.subjects: dict[str, list[int]] = {}  # subject -> [id of version 1, 2, …]
        self.config = {"compatibilityLevel": "BACKWARD"}
        self.faults: dict[str, float] = {"delay_s": 0.0, "status": 0}
        if self.path and self.path.exists():
            data = json.loads(self.path.read_text())
            self.schemas, self.subjects = data["schemas"], data["subjects"]

    def save(self) -> None:
        if self.path:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"schemas": self.schemas, "subjects": self.subjects}))
            tmp.replace(self.path)

    def find(self, body: Body) -> int | None:
        want = (body["schema"], body.get("schemaType", "AVRO"), body.get("references") or [])
        for i, s in enumerate(self.schemas):
            if (s["schema"], s["schemaType"], s["references"]) == want:
                return i + 1
        return None

    def register(self, subject: str, body: Body) -> int:
        with self.lock:
            sid = self.find(body)
            if sid is None:
                self.schemas.append({"schema": body["schema"],
                                     "schemaType": body.get("schemaType", "AVRO"),
                                     "references": body.get("references") or [],
                                     "guid": str(uuid.uuid4())})
                sid = len(self.schemas)
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            self.save()
            return sid

    def view(self, sid: int, subject: str | None = None,
             version: int | None = None) -> dict[str, Any]:
        s = self.schemas[sid - 1]
        out: dict[str, Any] = {"id": sid, "guid": s["guid"], "schema": s["schema"]}
        if s["schemaType"] != "AVRO":
            out["schemaType"] = s["schemaType"]
        if s["references"]:
            out["references"] = s["references"]
        if subject is not None:
            out.update(subject=subject, version=version)
        return out


class Fail(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


ROUTES: list[tuple[str, re.Pattern[str], Route]] = []


def route(method: str, pattern: str) -> Callable[[Route], Route]:
    def add(fn: Route) -> Route:
        ROUTES.append((method, re.compile(pattern + "$"), fn))
        return fn
    return add


def _subject(store: Store, name: str) -> list[int]:
    if name not in store.subjects or not store.subjects[name]:
        raise Fail(404, 40401, f"Subject '{name}' not found.")
    return store.subjects[name]


@route("GET", r"/schemas/types")
def _types(store: Store, q: dict[str, str], body: Body) -> list[str]:
    return TYPES


@route("GET", r"/schemas/ids/(\d+)")
def _by_id(store: Store, q: dict[str, str], body: Body, given: str) -> dict[str, Any]:
    sid = int(given)
    if not 1 <= sid <= len(store.schemas):
        raise Fail(404, 40403, f"Schema {sid} not found")
    out = store.view(sid)
    out.pop("id")
    return out


@route("GET", r"/schemas/guids/([0-9a-fA-F-]+)")
def _by_guid(store: Store, q: dict[str, str], body: Body, guid: str) -> dict[str, Any]:
    for i, s in enumerate(store.schemas):
        if s["guid"] == guid.lower():
            return store.view(i + 1)
    raise Fail(404, 40403, f"Schema {guid} not found")


@route("GET", r"/schemas/ids/(\d+)/subjects")
def _subjects_of(store: Store, q: dict[str, str], body: Body, sid: str) -> list[str]:
    return [s for s, ids in store.subjects.items() if int(sid) in ids]


@route("GET", r"/subjects")
def _subjects(store: Store, q: dict[str, str], body: Body) -> list[str]:
    return sorted(s for s, ids in store.subjects.items() if ids)


@route("GET", r"/subjects/([^/]+)/versions")
def _versions(store: Store, q: dict[str, str], body: Body, subject: str) -> list[int]:
    return list(range(1, len(_subject(store, subject)) + 1))


@route("GET", r"/subjects/([^/]+)/versions/([^/]+)")
def _version(store: Store, q: dict[str, str], body: Body, subject: str,
             version: str) -> dict[str, Any]:
    ids = _subject(store, subject)
    if version in ("latest", "-1"):
        n = len(ids)
    elif version.isdigit() and 1 <= int(version) <= len(ids):
        n = int(version)
    elif version.isdigit():
        raise Fail(404, 40402, f"Version {version} not found.")
    else:
        raise Fail(422, 42202, f"The specified version '{version}' is not a valid version id.")
    return store.view(ids[n - 1], subject, n)


@route("POST", r"/subjects/([^/]+)/versions")
def _register(store: Store, q: dict[str, str], body: Body, subject: str) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
        raise Fail(422, 42201, "Invalid schema")
    if body.get("schemaType", "AVRO") not in TYPES:
        raise Fail(422, 42201, f"Invalid schema type {body.get('schemaType')}")
    sid = store.register(subject, body)
    return {"id": sid, "guid": store.schemas[sid - 1]["guid"]}


@route("POST", r"/subjects/([^/]+)")
def _lookup(store: Store, q: dict[str, str], body: Body, subject: str) -> dict[str, Any]:
    ids = _subject(store, subject)
    sid = store.find(body)
    if sid is None or sid not in ids:
        raise Fail(404, 40403, "Schema not found")
    return store.view(sid, subject, ids.index(sid) + 1)


@route("DELETE", r"/subjects/([^/]+)")
def _delete(store: Store, q: dict[str, str], body: Body, subject: str) -> list[int]:
    ids = _subject(store, subject)
    with store.lock:
        store.subjects[subject] = []
        store.save()
    return list(range(1, len(ids) + 1))


@route("GET", r"/config(?:/([^/]+))?")
def _get_config(store: Store, q: dict[str, str], body: Body,
                subject: str | None = None) -> dict[str, str]:
    return store.config


@route("PUT", r"/config(?:/([^/]+))?")
def _put_config(store: Store, q: dict[str, str], body: Body,
                subject: str | None = None) -> dict[str, str | None]:
    level = (body or {}).get("compatibility") or (body or {}).get("compatibilityLevel")
    return {"compatibility": level}


@route("PUT", r"/_devtools/faults")
def _faults(store: Store, q: dict[str, str], body: Body) -> dict[str, float]:
    store.faults = {"delay_s": float(body.get("delay_s", 0)), "status": int(body.get("status", 0))}
    return store.faults


def handler(store: Store, user: str | None) -> type[BaseHTTPRequestHandler]:  # noqa: C901 - a flat dispatch over the registry API's routes
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            control = parts.path.startswith("/_devtools/")
            try:
                if user and not control and self._auth() != user:
                    raise Fail(401, 401, "Unauthorized")
                if not control and store.faults["delay_s"]:
                    time.sleep(store.faults["delay_s"])
                if not control and store.faults["status"]:
                    raise Fail(int(store.faults["status"]), 50001, "injected failure")
                body = json.loads(raw) if raw else None
                q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                for m, pattern, fn in ROUTES:
                    match = pattern.match(parts.path.rstrip("/") or "/")
                    if m == method and match:
                        args = [unquote(a) if a is not None else None for a in match.groups()]
                        return self._answer(200, fn(store, q, body, *args))
                raise Fail(404, 404, f"HTTP 404 Not Found: {method} {parts.path}")
            except Fail as f:
                return self._answer(f.status, {"error_code": f.code, "message": f.message})
            except (ValueError, KeyError, TypeError) as exc:
                return self._answer(422, {"error_code": 42201, "message": str(exc)})

        def _auth(self) -> str | None:
            value = self.headers.get("Authorization", "")
            if not value.startswith("Basic "):
                return None
            try:
                return base64.b64decode(value[6:]).decode()
            except ValueError:
                return None

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

    return Handler


def serve(port: int, host: str = "127.0.0.1", user: str | None = None, cert: str | None = None,
          key: str | None = None, data: str | None = None) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), handler(Store(data), user))
    server.daemon_threads = True
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--user", help="name:password required as HTTP basic auth")
    ap.add_argument("--cert", help="TLS certificate (PEM); with --key")
    ap.add_argument("--key", help="TLS private key (PEM)")
    ap.add_argument("--data", help="a JSON file that keeps the schemas across restarts")
    args = ap.parse_args()
    server = serve(args.port, args.host, args.user, args.cert, args.key, args.data)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
