"""``spark.runner: emr-serverless``: the read job as a job run on an EMR Serverless
application (``spark.emr_serverless``), waited for without a worker slot
(``airflow.emr``); it reads with its job role."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..timestamps import parse_duration_ms
from . import Runner, RunRequest

if TYPE_CHECKING:
    from ..config.fields import Fields


@dataclass(frozen=True, kw_only=True)
class EmrServerlessRunner(Runner):
    kind: ClassVar[str] = "emr-serverless"
    keys: ClassVar[tuple[str, ...]] = ("emr_serverless",)
    extra: ClassVar[str] = "amazon"
    own_identity: ClassVar[str | None] = "EMR Serverless (its job role)"
    defers: ClassVar[bool] = True  # the read task defers to EmrJobRunTrigger
    application_id: str
    execution_role_arn: str
    code_uri: str  # s3:// prefix where the job, package, plans and properties are uploaded
    aws_conn_id: str = "aws_default"
    venv_archive: str | None = None  # a packed virtualenv for the job's Python
    timeout: int = 3_600_000  # ms a job run may take before it is cancelled
    poll_interval: int = 30_000  # ms between the trigger's questions to EMR

    @classmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> EmrServerlessRunner:
        f.str("master", None)  # taken, as ever; an EMR Serverless application has its own
        e = f.child("emr_serverless")
        runner = cls(conf=conf, application_id=e.str("application_id"),
                     execution_role_arn=e.str("execution_role_arn"),
                     code_uri=e.str("code_uri"), aws_conn_id=e.str("aws_conn_id", "aws_default"),
                     venv_archive=e.str("venv_archive", None),
                     timeout=e.parse("timeout", parse_duration_ms, 3_600_000),
                     poll_interval=e.parse("poll_interval", parse_duration_ms, 30_000))
        if runner.poll_interval < 1000:
            raise e.error("must be at least 1s (the trigger asks EMR once per interval)",
                          "poll_interval")
        if not runner.code_uri.startswith("s3://"):
            raise e.error("must be an s3:// prefix where the job, package and plans are "
                          "uploaded", "code_uri")
        e.done()
        return runner

    def run(self, request: RunRequest) -> None:
        from ..airflow.emr import run_emr_serverless
        run_emr_serverless(request.cfg, request.plan, request.staging_uri, request.properties,
                           request.options, started=request.started)
