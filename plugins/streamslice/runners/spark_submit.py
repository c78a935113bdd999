"""``spark.runner: spark-submit``: the read job submitted to a cluster (``spark.master``:
``spark://…``, ``yarn``, ``k8s://…``), its secret properties shipped as a private file."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from . import Runner, RunRequest
from .local import default_master

if TYPE_CHECKING:
    from ..config.fields import Fields

log = logging.getLogger("streamslice")


@dataclass(frozen=True, kw_only=True)
class SparkSubmitRunner(Runner):
    kind: ClassVar[str] = "spark-submit"
    master: str = "local[*]"

    @classmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> SparkSubmitRunner:
        return cls(conf=conf, master=f.str("master", default_master()))

    def run(self, request: RunRequest) -> None:
        from ..spark.submit import submit
        submit(request.plan, request.staging_uri, master=self.master,
               properties=request.properties, conf=self.conf, options=request.options,
               log=log.info, files=[request.secrets_path] if request.secrets_path else [])
