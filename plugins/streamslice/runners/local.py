"""``spark.runner: local`` (the default): the read job on the worker's own Spark. By default
that is one Spark Connect server per worker on ``local[*]`` (or the ``spark.master`` given),
started by the first read and kept until it has been idle ``local_server_idle`` (1h)
(``spark.local_server``); ``local_server: false``, or a server that cannot start, reads on a
Spark in the task's own process instead, a JVM per task."""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigError
from ..timestamps import parse_duration_ms
from . import Runner, RunRequest

if TYPE_CHECKING:
    from typing import Self

    from ..config.fields import Fields

log = logging.getLogger("streamslice")
OFF = ("0", "false", "no", "off")


def default_master() -> str:
    """A deployment may name its own (``STREAMSLICE_SPARK_MASTER``)."""
    return os.environ.get("STREAMSLICE_SPARK_MASTER", "local[*]")


@dataclass(frozen=True, kw_only=True)
class MasterRunner(Runner):
    """A runner whose only key is ``spark.master`` (local, spark-submit)."""

    master: str = "local[*]"

    @classmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> Self:
        return cls(conf=conf, master=f.str("master", default_master()))


@dataclass(frozen=True, kw_only=True)
class LocalRunner(MasterRunner):
    kind: ClassVar[str] = "local"
    keys: ClassVar[tuple[str, ...]] = ("local_server", "local_server_idle")
    reads_ahead: ClassVar[bool] = True
    local_server: bool = True  # the worker's kept Spark Connect server (``spark.local_server``)
    local_server_idle_s: float = 3600.0

    @classmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> Self:
        env = os.environ.get("STREAMSLICE_LOCAL_SERVER", "true").strip().lower() not in OFF
        idle_ms = f.parse("local_server_idle", parse_duration_ms, None)
        if idle_ms is None:
            idle_ms = parse_duration_ms(os.environ.get("STREAMSLICE_LOCAL_SERVER_IDLE") or "1h")
        return cls(conf=conf, master=f.str("master", default_master()),
                   local_server=f.bool("local_server", env),
                   local_server_idle_s=max(1.0, idle_ms / 1000))

    def run(self, request: RunRequest) -> None:
        if os.environ.get("SPARK_REMOTE"):
            raise ConfigError("SPARK_REMOTE is set, so PySpark would not run local[*]: use "
                              "runner: connect, or unset it", field="spark.runner")
        if self.local_server and self._on_server(request):
            return
        from ..spark.job import run_read, unwrap
        from ..spark.session import spark_session
        try:
            spark = spark_session(master=self.master, conf=self.conf)
        except Exception as exc:  # noqa: BLE001 - a JVM that cannot start: one line, not Py4J's traceback
            raise unwrap(exc) from None
        run_read(spark, request.plan, request.staging_uri, properties=request.properties,
                 options=request.options, ahead=request.ahead)

    def _on_server(self, request: RunRequest) -> bool:
        """The read on the worker's server; False where none could be started."""
        from ..spark.connect import run_connect_read
        from ..spark.local_server import ServerSpec, ServerUnavailable, lease
        from ..spark.session import SQL_CONF
        conf = {"spark.ui.enabled": "false", **SQL_CONF,
                **json.loads(os.environ.get("STREAMSLICE_SPARK_CONF") or "{}"), **self.conf}
        try:
            with lease(ServerSpec(self.master, conf, self.local_server_idle_s)) as server:
                run_connect_read(server.remote, request.plan, request.staging_uri,
                                 properties=request.properties, options=request.options,
                                 ahead=request.ahead)
        except ServerUnavailable as exc:
            log.warning("%s; reading in this task's own Spark instead", exc)
            return False
        return True
