"""``spark.runner: spark-submit``: the read job submitted to a cluster (``spark.master``:
``spark://…``, ``yarn``, ``k8s://…``), its secret properties shipped as a private file."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from .local import MasterRunner

if TYPE_CHECKING:
    from . import RunRequest

log = logging.getLogger("streamslice")


@dataclass(frozen=True, kw_only=True)
class SparkSubmitRunner(MasterRunner):
    kind: ClassVar[str] = "spark-submit"

    def run(self, request: RunRequest) -> None:
        from ..spark.submit import submit
        submit(request.plan, request.staging_uri, master=self.master,
               properties=request.properties, conf=self.conf, options=request.options,
               log=log.info, files=[request.secrets_path] if request.secrets_path else [])
