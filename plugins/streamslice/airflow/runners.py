"""Where the read job runs: in-process on ``local[*]`` (the default), or spark-submit to a
cluster (``spark.runner: spark-submit`` with ``spark.master: spark://…``, ``yarn``,
``k8s://…``)."""
import logging

from ..spark.job import run_spark_job_inprocess

log = logging.getLogger("streamslice")


def run_spark_read(cfg, plan, staging_uri, properties, consumer_arns=None):
    if cfg.spark.runner == "local":
        return run_spark_job_inprocess(cfg, plan, staging_uri, properties, consumer_arns)
    if cfg.spark.runner == "spark-submit":
        from ..spark.submit import submit
        return submit(plan, staging_uri, master=cfg.spark.master, properties=properties,
                      conf=cfg.spark.conf, client=getattr(cfg.source, "client", None),
                      output_format=cfg.output.format, compression=cfg.output.compression,
                      consumer_arns=consumer_arns, log=log.info)
    from .emr import run_emr_serverless
    return run_emr_serverless(cfg, plan, staging_uri, properties, consumer_arns)
