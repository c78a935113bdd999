"""``spark.runner: connect``: the read job on a long-running Spark Connect server
(``spark.remote: sc://…``, or PySpark's own ``SPARK_REMOTE``), which reads with its own
identity."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from . import Runner, RunRequest

if TYPE_CHECKING:
    from ..config.fields import Fields

# Spark Connect's URL form: sc://host[:port][/;param=value;…] (port 15002 by default)
CONNECT_URL = re.compile(r"sc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?(/(;[A-Za-z_]+=[^;/\s]*)*)?")


@dataclass(frozen=True, kw_only=True)
class ConnectRunner(Runner):
    kind: ClassVar[str] = "connect"
    keys: ClassVar[tuple[str, ...]] = ("remote",)
    own_identity: ClassVar[str | None] = "the Spark Connect server"
    tasks: ClassVar[str] = "combined"  # the read is a session on a warm server: no JVM to start
    reads_ahead: ClassVar[bool] = True
    remote: str  # sc://host:15002

    @classmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> ConnectRunner:
        if f.has("master"):
            raise f.error("is not used with runner: connect (the Spark Connect server has "
                          "its own master)", "master")
        remote = f.str("remote", os.environ.get("SPARK_REMOTE") or None)
        if remote is None:
            raise f.error("is required with runner: connect (or set SPARK_REMOTE), e.g. "
                          "sc://spark-connect:15002", "remote")
        if not CONNECT_URL.fullmatch(remote.strip()):
            raise f.error(f"{remote!r} is not a Spark Connect URL: sc://host:15002, "
                          "optionally followed by /;param=value (token, use_ssl, user_id…)",
                          "remote")
        return cls(conf=conf, remote=remote.strip())

    def run(self, request: RunRequest) -> None:
        from ..spark.connect import run_connect_read
        run_connect_read(self.remote, request.plan, request.staging_uri, conf=self.conf,
                         properties=request.properties, options=request.options,
                         ahead=request.ahead)
