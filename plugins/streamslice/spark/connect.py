"""The read job on a long-running Spark Connect server (``spark.runner: connect``): no JVM
starts per run. The task ships this package to the server as a zip artifact (so a remote
server runs the same code as the task), registers the data sources and runs ``run_read``.

Runs share one server-side session per package version, Spark settings and half hour. A new
Connect session starts its own Python workers on the server (Spark keys them by the session's
artifacts), which costs seconds; a shared session keeps them warm, so a run pays only for
its own plan. The id is derived from what the session holds, so concurrent tasks find the
same one, and it changes every half hour, before the server's idle timeout (an hour by
default) can close a session that is still handed out. A session found closed anyway is
replaced by a private one for that run."""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
import uuid
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, StreamsliceError
from .job import run_read, unwrap
from .package import PACKAGE_ROOT, package_files
from .session import SQL_CONF, spark_session

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ..planning.plan import ReadPlan
    from ..sources import Properties

SESSION_WINDOW_S = 1800
_NAMESPACE = uuid.UUID("6f1d3a52-5b0e-4c38-9d57-2f0c1e7a9b41")
_packages: dict[str, Path] = {}


def run_connect_read(remote: str, plan: ReadPlan[Any], staging_uri: str, *,
                     conf: dict[str, str] | None = None,
                     properties: Properties | None = None,
                     options: dict[str, Any] | None = None,
                     ahead: Sequence[tuple[ReadPlan[Any], str]] = ()) -> str:
    """``run_read`` on the Spark Connect server at ``remote``; a server that cannot be reached
    is a SourceError (retried), never a short read."""
    with connect_session(remote, conf) as spark:
        tag = f"streamslice-{uuid.uuid4().hex[:12]}"
        spark.addTag(tag)
        try:
            return run_read(spark, plan, staging_uri, properties=properties, options=options,
                            ahead=ahead)
        except Exception:
            raise
        except BaseException:  # the task was killed: stop the server-side job too
            _quietly(lambda: spark.interruptTag(tag))
            raise


@contextmanager
def connect_session(remote: str, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A Connect session with the package and the data sources in place; closed (not
    released, when shared) afterwards."""
    conf = {**SQL_CONF, **(conf or {})}
    zip_path = package()
    spark, shared = None, True
    try:
        spark = _open(remote, session_id(zip_path.name, conf))
        try:
            _prepare(spark, zip_path, conf)
        except Exception as exc:
            if "SESSION_CLOSED" not in str(exc):
                raise
            _close(spark, shared)
            spark, shared = _open(remote, None), False
            _prepare(spark, zip_path, conf)
        yield spark
    except StreamsliceError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark wraps every error: unwrap names ours
        raise unwrap(exc) from None
    finally:
        if spark is not None:
            _close(spark, shared)


@contextmanager
def stream_session(remote: str | None = None) -> Iterator[Any]:
    """Where a team's own query runs (the example DAGs'): a Connect session on ``remote``
    (``connect_session``), or, without one, this process's session (local, or spark-submit's)."""
    if remote:
        with connect_session(remote) as spark:
            yield spark
        return
    yield spark_session()


def rows_per_batch(query: Any) -> dict[str, int]:
    """{batch id: rows read} of a finished streaming query, from its sources' counts: a
    Connect session's progress may leave the total out."""
    return {str(p["batchId"]): sum(int(s["numInputRows"]) for s in p["sources"])
            for p in query.recentProgress}


def session_id(package_name: str, conf: dict[str, str], now: float | None = None) -> str:
    window = int((time.time() if now is None else now) // SESSION_WINDOW_S)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = json.dumps([package_name, sorted(conf.items()), python, window])
    return str(uuid.uuid5(_NAMESPACE, key))


def package() -> Path:
    """``streamslice`` as a zip named by a hash of its sources (built once per version)."""
    root = PACKAGE_ROOT
    files = package_files()
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    name = f"streamslice-{digest.hexdigest()[:16]}.zip"
    if name in _packages and _packages[name].exists():
        return _packages[name]
    folder = Path(tempfile.gettempdir()) / f"streamslice-connect-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    target = folder / name
    if not target.exists():
        partial = folder / f".{name}.{os.getpid()}"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for path in files:
                z.write(path, path.relative_to(root))
        os.replace(partial, target)
        for old in folder.glob("streamslice-*.zip"):  # earlier versions, unused for a day
            if old != target and time.time() - old.stat().st_mtime > 86_400:
                old.unlink(missing_ok=True)
    _packages[name] = target
    return target


def session_url(remote: str, session: str | None) -> str:
    """``remote`` with ``;session_id=…`` (unless it names a session of its own)."""
    if not session or "session_id=" in remote:
        return remote
    if "/;" not in remote:
        remote = remote.rstrip("/") + "/"
    return f"{remote};session_id={session}"


def _open(remote: str, session: str | None) -> Any:
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession
    spark = SparkSession.builder.remote(session_url(remote, session)).create()
    # Fail within ~10 s when the server is gone (Spark's default keeps trying for 10 min):
    # the task's own retry, with its delay, is the place to wait.
    spark.client.set_retry_policies([DefaultPolicy(
        max_retries=5, initial_backoff=100, backoff_multiplier=3, max_backoff=5000)])
    return spark


# A shared session's mark that it holds this package, its settings and the data sources:
# a later run checks it in one call instead of setting each again (seven calls a run).
PREPARED = "spark.streamslice.prepared"


def _prepare(spark: Any, zip_path: Path, conf: dict[str, str]) -> None:
    settings = json.dumps(sorted(conf.items())).encode()
    mark = f"{zip_path.name}:{hashlib.sha256(settings).hexdigest()[:16]}"
    if spark.conf.get(PREPARED, None) == mark:
        return
    _set_up(spark, zip_path, conf)
    spark.conf.set(PREPARED, mark)


def _set_up(spark: Any, zip_path: Path, conf: dict[str, str]) -> None:
    from .datasource import DATA_SOURCES
    for key, value in conf.items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:
            if "CANNOT_MODIFY" not in str(exc):
                raise
            raise ConfigError(f"{key} cannot be set per session on a Spark Connect server; "
                              "set it where the server starts", field="spark.conf") from None
    try:
        spark.addArtifacts(str(zip_path), pyfile=True)
    except Exception as exc:  # named by content hash: the session already has this version
        # (a concurrent first upload loses the server's file move instead)
        if not re.search(r"ARTIFACT_ALREADY_EXISTS|FileAlreadyExistsException.*"
                         + re.escape(zip_path.name), str(exc)):
            raise
    for cls in DATA_SOURCES:
        try:
            spark.dataSource.register(cls)
        except Exception as exc:  # a concurrent task registered it first (the same version)
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
                raise


def _close(spark: Any, shared: bool) -> None:
    spark.release_session_on_close = not shared  # a shared session stays for the next run
    _quietly(spark.stop)


def _quietly(call: Any) -> None:
    try:
        call()
    except Exception:  # noqa: BLE001 - a cleanup: the server may be gone
        pass
