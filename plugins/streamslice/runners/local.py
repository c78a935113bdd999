"""``spark.runner: local`` (the default): the read job in the task's own process, on a
``local[*]`` Spark (or the ``spark.master`` given)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigError
from . import Runner, RunRequest

if TYPE_CHECKING:
    from typing import Self

    from ..config.fields import Fields


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
    reads_ahead: ClassVar[bool] = True

    def run(self, request: RunRequest) -> None:
        if os.environ.get("SPARK_REMOTE"):
            raise ConfigError("SPARK_REMOTE is set, so PySpark would not run local[*]: use "
                              "runner: connect, or unset it", field="spark.runner")
        from ..spark.job import run_read, unwrap
        from ..spark.session import spark_session
        try:
            spark = spark_session(master=self.master, conf=self.conf)
        except Exception as exc:  # noqa: BLE001 - a JVM that cannot start: one line, not Py4J's traceback
            raise unwrap(exc) from None
        run_read(spark, request.plan, request.staging_uri, properties=request.properties,
                 options=request.options, ahead=request.ahead)
