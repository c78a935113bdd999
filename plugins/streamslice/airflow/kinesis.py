"""Kinesis glue: credentials from an Airflow AWS connection (the amazon provider's hook), and
the Enhanced Fan-Out setup/teardown tasks."""
import logging

from ..config import load_pipeline
from ..kinesis.client import make_client
from ..kinesis.consumers import deregister, register, run_consumer_name, sweep
from ..kinesis.planner import stream_names

log = logging.getLogger("streamslice")


def kinesis_properties(source):
    """Plain client properties (region, endpoint_url, credentials) for the driver and the Spark
    executors. With ``conn_id`` they come from that AWS connection (``endpoint_url`` and
    ``region_name`` in its extra); without, boto3's default chain applies."""
    props = {}
    if source.conn_id:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
        hook = AwsBaseHook(aws_conn_id=source.conn_id, client_type="kinesis",
                           region_name=source.region)
        creds = hook.get_credentials()
        props = {"region": hook.region_name, "access_key_id": creds.access_key,
                 "secret_access_key": creds.secret_key, "session_token": creds.token,
                 "endpoint_url": hook.conn_config.get_service_endpoint_url("kinesis")}
    return source.client_properties({k: v for k, v in props.items() if v})


def consumer_name(source, run_id):
    if source.efo_registration == "per_run":
        return run_consumer_name(source.efo_consumer_name, run_id)
    return source.efo_consumer_name


def _client_and_streams(cfg):
    client = make_client(kinesis_properties(cfg.source))
    return client, [stream_names(client, ref) for ref in cfg.source.streams]


def efo_sweep_task(pipeline_file, **context):
    from .tasks import operator_errors
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        for name, arn in streams:
            gone = sweep(client, arn, cfg.source.efo_consumer_name,
                         cfg.source.efo_sweep_after_ms / 1000)
            for consumer in gone:
                log.warning("Deregistered leftover consumer %s on %s", consumer, name)


def efo_register_task(pipeline_file, **context):
    """Setup: register (or reuse) the run's consumer on every stream, wait until ACTIVE, and
    hand the ARNs on through XCom."""
    from .tasks import operator_errors
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        name = consumer_name(cfg.source, context["run_id"])
        arns = {}
        for stream, stream_arn in streams:
            arns[stream] = register(client, stream_arn, name)
            log.info("Consumer %s is ACTIVE on %s: %s", name, stream, arns[stream])
        return arns


def efo_deregister_task(pipeline_file, **context):
    """Teardown (runs even when the read failed): deregister the run's consumer and wait until
    it is gone."""
    from .tasks import operator_errors
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        client, streams = _client_and_streams(cfg)
        name = consumer_name(cfg.source, context["run_id"])
        for stream, stream_arn in streams:
            if deregister(client, stream_arn, name):
                log.info("Consumer %s deregistered from %s", name, stream)


def consumer_arns(cfg, context):
    """The ARNs the read job subscribes with: from efo_register, or the config (none)."""
    src = cfg.source
    if src.kind != "kinesis" or src.reader != "efo":
        return None
    if src.efo_registration == "none":
        return dict(src.efo_consumer_arns)
    return context["ti"].xcom_pull(task_ids="efo_register")
