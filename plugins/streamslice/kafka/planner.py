"""The Kafka planner (FLIP-27's enumerator): resolve start/stop strategies into splits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, DataLossError, PlanError
from ..planning.bounds import bounds_for
from ..planning.plan import Gap
from ..planning.progress import Progress
from ..planning.subsplit import subsplit
from ..sources import Planner, ResetTarget, SourcePlan
from .positions import PlanContext
from .split import KafkaSplit

if TYPE_CHECKING:
    from ..sources import PlanRequest, Properties
    from .admin import KafkaAdmin, TopicPartition
    from .positions import Offsets
    from .source import KafkaSource


@dataclass(frozen=True)
class KafkaPlanner(Planner[KafkaSplit]):
    """Plans a configured ``KafkaSource`` through kafka-python's admin calls."""

    source: KafkaSource

    def _admin(self, properties: Properties) -> KafkaAdmin:
        from .admin import KafkaAdmin
        return KafkaAdmin(properties)

    def split_keys(self, properties: Properties) -> list[str]:
        with self._admin(properties) as admin:
            return [tp.key for tp in self.source.subscriber.partitions(admin)]

    def plan(self, request: PlanRequest) -> SourcePlan[KafkaSplit]:
        from .spark_read import plan_spark_read
        with self._admin(request.properties) as admin:
            if self.source.spark is not None:
                return plan_spark_read(self.source, admin, request)
            return plan_kafka(self.source, admin, request)

    def reset_positions(self, to: Any, properties: Properties) -> ResetTarget:
        """``to``: earliest | latest | {timestamp: ms} | {offsets: {"topic:p": offset}}."""
        from .positions import Committed, parse_position
        if to in ("TRIM_HORIZON", "LATEST"):
            to = "earliest" if to == "TRIM_HORIZON" else "latest"
        try:
            spec = parse_position(to)
        except ValueError as exc:
            raise ConfigError(f"reset target: {exc}") from None
        if isinstance(spec, Committed):
            raise ConfigError("reset target: give earliest, latest, a timestamp or offsets")
        with self._admin(properties) as admin:
            tps = self.source.subscriber.partitions(admin)
            known = {tp.key for tp in tps}
            unknown = sorted(set(getattr(spec, "offsets", {})) - known)
            if unknown:
                raise ConfigError(f"reset target: {unknown[0]} is not a partition this "
                                  f"pipeline reads ({', '.join(sorted(known))})")
            ctx = PlanContext(admin, admin.beginning_offsets(tps), admin.end_offsets(tps))
            return ResetTarget({tp.key: off for tp, off in spec.resolve(tps, ctx).items()})


REPLANS = 5  # plans made again when a run's marks changed meanwhile (planning.progress)


def plan_kafka(source: KafkaSource, admin: KafkaAdmin,
               request: PlanRequest) -> SourcePlan[KafkaSplit]:
    """Splits, skipped gaps and next checkpoint positions for one run; made again while a
    mark it took was replaced by another run's write meanwhile."""
    for _ in range(REPLANS):
        progress = Progress(request.marks) if request.marks is not None and \
            request.interval is not None else None
        planned = _plan_once(source, admin, request, progress)
        if progress is None or progress.confirmed():
            return planned
    raise PlanError("the partitions' progress marks kept changing while this run planned "
                    f"({REPLANS} plans); retry")


def _plan_once(source: KafkaSource, admin: KafkaAdmin, request: PlanRequest,
               progress: Progress | None) -> SourcePlan[KafkaSplit]:
    tps = source.subscriber.partitions(admin)
    log_start, end = admin.beginning_offsets(tps), admin.end_offsets(tps)
    bounds = bounds_for(request.interval)
    ctx = PlanContext(admin, log_start, end, bounds=bounds, now_ms=request.now_ms,
                      checkpoint=request.checkpoint.positions if request.checkpoint else None,
                      progress=progress)
    # a pipeline's source has both; a Spark read's (start and stop None) binds its own
    assert source.start is not None and source.stop is not None, "a Spark read's source"
    starts, stops = source.start.resolve(tps, ctx), source.stop.resolve(tps, ctx)
    at: dict[str, Offsets] = {}
    if bounds is not None:  # which records of the range the run owns (planning.bounds)
        at = {name: ctx.offsets_at(tps, ms) for name, ms in bounds.ownership().items()}
    owned = at.get("owned_until")

    starts, gaps = _check_data_loss(starts, log_start, end, source.on_data_loss)
    splits: list[KafkaSplit] = []
    next_positions: dict[str, int] = {}
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
                late_from=_at(at, "late_from", tp), owned_until=_at(at, "owned_until", tp),
                home_from=_at(at, "home_from", tp), early_until=_at(at, "early_until", tp)))
        next_positions[tp.key] = owned[tp] if owned else stop
    info = {"bootstrap_servers": request.properties.get("bootstrap.servers")
            or source.bootstrap_servers, "client": source.client}
    return SourcePlan(splits=splits, gaps=gaps, next_positions=next_positions, info=info)


def _at(at: dict[str, Offsets], name: str, tp: TopicPartition) -> int | None:
    return at[name][tp] if name in at else None


def _check_data_loss(starts: Offsets, log_start: Offsets, end: Offsets,
                     policy: str) -> tuple[Offsets, list[Gap]]:
    """A start below the log start (expired) or past the end (topic recreated or truncated)."""
    fixed = dict(starts)
    gaps: list[Gap] = []
    problems: list[str] = []
    for tp, start in starts.items():
        if start < log_start[tp]:
            gap = Gap(tp.key, start, log_start[tp], "expired")
            problems.append(f"{tp.key}: records expired between offset {start} and "
                            f"{log_start[tp]} (the log now starts at {log_start[tp]})")
        elif start > end[tp]:
            gap = Gap(tp.key, log_start[tp], log_start[tp],
                      f"start {start} past the end {end[tp]}: topic recreated or truncated")
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
