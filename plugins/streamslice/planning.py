"""Turn a source spec + run context into a ReadPlan (the driver side, before Spark runs)."""
import time

from .plan import Interval, ReadPlan
from .timeutil import from_ms


def partition_name(mode, interval=None, batch=None, run_id=None):
    """The output partition a run publishes to, relative to the pipeline's dataset."""
    if mode == "interval":
        return "interval=" + from_ms(interval.start).strftime("%Y%m%dT%H%M%SZ")
    if mode == "incremental":
        return f"batch={batch:08d}"
    return "run=" + "".join(c if c.isalnum() or c in "-_." else "_" for c in (run_id or "manual"))


def plan_run(source, *, pipeline, mode, decode=None, interval=None, checkpoint=None,
             run_id=None, properties=None, now_ms=None):
    """Resolve ``source`` (a KafkaSource or KinesisSource) into a ReadPlan.

    ``checkpoint`` is the pipeline's committed state (``checkpoint.Checkpoint``) or None.
    """
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    positions = checkpoint.positions if checkpoint else None
    if source.kind == "kafka":
        from .kafka.admin import KafkaAdmin
        from .kafka.planner import plan_kafka
        with KafkaAdmin(properties or source.client_properties()) as admin:
            splits, gaps, nxt = plan_kafka(source, admin, mode=mode, interval=interval,
                                           checkpoint=positions, now_ms=now_ms)
        info = {"bootstrap_servers": (properties or {}).get("bootstrap.servers")
                or source.bootstrap_servers, "client": source.client}
    else:
        from .kinesis.planner import plan_kinesis
        initial = (checkpoint.source_state or {}).get("initial_position") if checkpoint else None
        splits, gaps, nxt, info = plan_kinesis(source, mode=mode, interval=interval,
                                               checkpoint=positions, now_ms=now_ms,
                                               properties=properties, initial=initial)
    batch = (checkpoint.batch if checkpoint else 0) + 1 if mode == "incremental" else None
    return ReadPlan(
        pipeline=pipeline, source=source.kind, mode=mode, planned_at=now_ms, splits=splits,
        partition=partition_name(mode, interval, batch, run_id), run_id=run_id,
        interval=interval if isinstance(interval, Interval) or interval is None else None,
        batch=batch, base_checkpoint=checkpoint.to_dict() if checkpoint else None,
        next_positions=nxt, gaps=gaps, decode=decode.to_dict() if decode else {},
        source_info=info)
