"""The Kafka planner (FLIP-27's enumerator): resolve start/stop specs into concrete splits."""
from ..errors import DataLossError, PlanError
from ..interval import boundary_times
from ..plan import KafkaSplit
from ..subsplit import subsplit
from .initializers import PlanContext


def plan_kafka(source, admin, *, mode, interval=None, checkpoint=None, now_ms=0):
    """Splits, skipped gaps and next checkpoint positions for one run.

    ``source`` is a ``KafkaSource``; ``checkpoint`` maps ``topic:partition`` → next offset.
    """
    tps = source.subscriber.partitions(admin)
    log_start, end = admin.beginning_offsets(tps), admin.end_offsets(tps)
    ctx = PlanContext(admin, log_start, end, interval=interval, checkpoint=checkpoint,
                      now_ms=now_ms)
    late_from = owned = None
    if mode == "interval":
        at = boundary_times(interval)
        look = {name: admin.offsets_for_times({tp: ms for tp in tps}, ends=end)
                for name, ms in at.items()}
        starts, stops = look["start"], look["stop"]
        late_from, owned = look["late_from"], look["owned_until"]
    else:
        starts, stops = source.start.resolve(tps, ctx), source.stop.resolve(tps, ctx)

    starts, gaps = _check_data_loss(starts, log_start, end, source.on_data_loss)
    splits, next_positions = [], {}
    for tp in tps:
        start, stop = starts[tp], stops[tp]
        if stop > end[tp]:
            raise PlanError(f"{tp.key}: stop offset {stop} is beyond the high watermark "
                            f"{end[tp]}; a bounded read cannot wait for records not yet written")
        stop = max(stop, start)
        for lo, hi in subsplit(start, stop, source.max_records_per_split):
            splits.append(KafkaSplit(
                id=len(splits), topic=tp.topic, partition=tp.partition, start=lo, stop=hi,
                log_start=log_start[tp], high_watermark=end[tp],
                late_from=late_from[tp] if late_from else None,
                owned_until=owned[tp] if owned else None))
        next_positions[tp.key] = owned[tp] if owned else stop
    return splits, gaps, next_positions


def _check_data_loss(starts, log_start, end, policy):
    """A start below the log start (expired) or past the end (topic recreated or truncated)."""
    fixed, gaps, problems = dict(starts), [], []
    for tp, start in starts.items():
        if start < log_start[tp]:
            gap = {"key": tp.key, "from": start, "to": log_start[tp], "reason": "expired"}
            problems.append(f"{tp.key}: records expired between offset {start} and "
                            f"{log_start[tp]} (the log now starts at {log_start[tp]})")
        elif start > end[tp]:
            gap = {"key": tp.key, "from": log_start[tp], "to": log_start[tp],
                   "reason": f"start {start} past the end {end[tp]}: topic recreated or truncated"}
            problems.append(f"{tp.key}: start offset {start} is past the end of the log "
                            f"({end[tp]}); the topic was recreated or truncated")
        else:
            continue
        gaps.append(gap)
        fixed[tp] = log_start[tp]
    if problems and policy != "skip":
        raise DataLossError("data loss: " + "; ".join(problems) +
                            ". Set on_data_loss: skip to continue from the log start "
                            "and record the gap.", gaps)
    return fixed, gaps
