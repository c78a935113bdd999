"""Where the read job runs: in-process on ``local[*]`` (the default)."""
from ..spark.job import run_spark_job_inprocess


def run_spark_read(cfg, plan, staging_uri, properties, consumer_arns=None):
    if cfg.spark.runner == "local":
        return run_spark_job_inprocess(cfg, plan, staging_uri, properties, consumer_arns)
    raise NotImplementedError(f"spark.runner {cfg.spark.runner!r} is not available yet")
