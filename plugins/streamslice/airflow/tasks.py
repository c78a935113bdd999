"""The task callables of a pipeline DAG: plan → read → commit. Thin: the work is in the core."""
import logging
import re
import time
from contextlib import contextmanager

from .. import faults
from ..checkpoint import advance
from ..commit import build_manifest, plan_id, publish, read_manifest, staging_for, verify
from ..config import load_pipeline
from ..errors import SourceError, StreamsliceError
from ..plan import Interval, ReadPlan
from ..planning import plan_run
from ..staging import Staging
from ..timeutil import from_ms, iso, to_ms
from .hooks import source_properties
from .store import TaskCheckpointStore, output_asset

log = logging.getLogger("streamslice")


@contextmanager
def operator_errors():
    """Our errors become one clear line in the task log. Transient source errors are retried;
    the rest (bad config, data loss, failed verification) fail at once."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException
    try:
        yield
    except SourceError as exc:
        log.error("%s", exc)
        raise AirflowException(str(exc)) from None
    except StreamsliceError as exc:
        log.error("%s", exc)
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from None


def plan_task(pipeline_file, **context):
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        saved = context["task_state_store"].get("plan")
        if saved:
            log.info("Reusing the plan saved by an earlier try of this run (%d splits).",
                     len(saved["splits"]))
            return saved
        interval = None
        if cfg.mode == "interval":
            interval = Interval(to_ms(context["data_interval_start"]),
                                to_ms(context["data_interval_end"]), cfg.allowed_lateness)
            _wait_until_closed(interval)
        checkpoint = TaskCheckpointStore(context, output_asset(cfg)).get()
        plan = plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                        interval=interval, checkpoint=checkpoint, run_id=context["run_id"],
                        properties=source_properties(cfg.source))
        log.info("Planned %d splits, %d records to %s; lag %s", len(plan.splits),
                 plan.total_records_hint, plan.partition,
                 {s.key: s.lag for s in plan.splits})
        for gap in plan.gaps:
            log.warning("Data loss skipped (on_data_loss: skip): %s", gap)
        data = plan.to_dict()
        context["task_state_store"].set("plan", data)
        return data


def _wait_until_closed(interval):
    """An interval is read once it is over and its lateness has passed; until then the task
    is rescheduled rather than reading a range that can still grow."""
    from airflow.sdk.exceptions import AirflowRescheduleException
    ready_at = interval.end + interval.allowed_lateness
    now = int(time.time() * 1000)
    if now < ready_at:
        log.info("Interval closes (with lateness) at %s; rescheduling.", iso(ready_at))
        raise AirflowRescheduleException(from_ms(ready_at))


def read_task(pipeline_file, **context):
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        plan = ReadPlan.from_dict(context["ti"].xcom_pull(task_ids="plan"))
        attempt = f"{_safe(context['run_id'])}-try{context['ti'].try_number}"
        staging = staging_for(cfg.output.dataset(cfg.name), plan, attempt)
        from .kinesis import consumer_arns
        from .runners import run_spark_read
        started = time.time()
        run_spark_read(cfg, plan, staging.uri, source_properties(cfg.source),
                       consumer_arns=consumer_arns(cfg, context))
        log.info("Read %d splits into %s in %.1fs", len(plan.splits), staging.uri,
                 time.time() - started)
        return staging.uri


def commit_task(pipeline_file, **context):
    with operator_errors():
        cfg = load_pipeline(pipeline_file)
        plan = ReadPlan.from_dict(context["ti"].xcom_pull(task_ids="plan"))
        staging = Staging(context["ti"].xcom_pull(task_ids="read"))
        asset = output_asset(cfg)
        dataset = cfg.output.dataset(cfg.name)
        now = int(time.time() * 1000)
        manifest = _publish_once(cfg, plan, staging, dataset, context["run_id"], now)
        faults.check("after_publish")
        store = TaskCheckpointStore(context, asset)
        current = store.get()
        checkpoint = advance(current, plan, now_ms=now, run_id=context["run_id"],
                             positions=_reader_positions(plan, manifest, current))
        store.put(checkpoint)
        _mirror_to_group(cfg, checkpoint)
        from .alerting import after_commit
        after_commit(cfg, manifest, context, context["asset_state_store"][asset])
        extra = run_metrics(manifest)
        context["outlet_events"][asset].extra = extra
        log.info("Committed %s: %d records, %d dead letters; checkpoint advanced.",
                 manifest["partition"], manifest["records"], manifest["dead_letters"])
        return {**extra, "checkpoint": checkpoint.to_dict()}


def run_metrics(manifest):
    """What downstream DAGs and the UI see as the asset event's extra."""
    splits = manifest["splits"]
    lag = [s.get("lag") for s in splits if s.get("lag") is not None]
    behind = [s.get("millis_behind_latest") for s in splits
              if s.get("millis_behind_latest") is not None]
    out = {k: manifest[k] for k in ("partition", "records", "dead_letters", "late_records",
                                    "min_timestamp", "max_timestamp", "batch", "plan_id")}
    out.update(splits=len(splits), bytes=sum(s.get("bytes", 0) for s in splits),
               lag_records=sum(lag) if lag else None,
               millis_behind_latest=max(behind) if behind else None, gaps=len(manifest["gaps"]))
    return out


def _mirror_to_group(cfg, checkpoint):
    src = cfg.source
    if src.kind != "kafka" or not src.commit_group or not checkpoint:
        return
    from ..kafka.groups import commit_to_group
    try:
        commit_to_group(source_properties(src), src.commit_group, checkpoint.positions)
    except StreamsliceError as exc:  # reporting only: never fails the run
        log.warning("%s (the checkpoint in Airflow is unaffected)", exc)


def _reader_positions(plan, manifest, current):
    """Kinesis checkpoints come from the readers' summaries (last sequence number, SHARD_END)."""
    if plan.source != "kinesis":
        return None
    from ..kinesis.positions import next_positions
    summaries = {s["split"]: s for s in manifest["splits"]}
    base = current.positions if current else {}
    return next_positions(plan, summaries, base)


def _publish_once(cfg, plan, staging, dataset, run_id, now):
    """Publish the staged output, or recognise that an earlier try already did."""
    if staging.fs.get_file_info(staging.root).type.name != "NotFound":
        figures = verify(plan, staging, cfg.output.format)
        manifest = build_manifest(plan, figures, run_id=run_id, committed_at=now)
        faults.check("before_publish")
        publish(plan, staging, dataset, manifest)
        _clean_attempts(dataset, plan)
        return manifest
    published = read_manifest(dataset, plan.partition)
    if published and published.get("plan_id") == plan_id(plan):
        log.info("%s was already published by an earlier try of this run.", plan.partition)
        return published
    from ..errors import CommitError
    raise CommitError(f"the staged output {staging.uri} is gone and {plan.partition} was not "
                      "published from this plan; clear the read task to read it again")


def _clean_attempts(dataset, plan):
    """Staging left by failed tries of the same partition."""
    import pyarrow.fs as pafs
    fs, root = pafs.FileSystem.from_uri(dataset)
    path = f"{root}/_staging/{plan.partition}"
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        fs.delete_dir(path)


def _safe(text):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)
