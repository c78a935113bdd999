"""Checkpoint resets: where each split key should start next, from a position spec."""
import time

from .checkpoint import Checkpoint
from .errors import ConfigError


def reset_positions(source, to, properties=None):
    """``to`` is ``earliest`` | ``latest`` | ``{timestamp: …}`` | ``{offsets: {…}}`` (the same
    forms as a pipeline's start). Returns ``{key: next position}`` for every partition."""
    if source.kind != "kafka":
        from .kinesis.offsets import kinesis_reset_positions
        return kinesis_reset_positions(source, to, properties)
    from .kafka.admin import KafkaAdmin
    from .kafka.initializers import Committed, PlanContext, parse_position
    try:
        spec = parse_position(to)
    except ValueError as exc:
        raise ConfigError(f"reset target: {exc}") from None
    if isinstance(spec, Committed):
        raise ConfigError("reset target: give earliest, latest, a timestamp or offsets")
    with KafkaAdmin(properties or source.client_properties()) as admin:
        tps = source.subscriber.partitions(admin)
        ctx = PlanContext(admin, admin.beginning_offsets(tps), admin.end_offsets(tps))
        return {tp.key: offset for tp, offset in spec.resolve(tps, ctx).items()}


def reset(current, positions, note="reset"):
    """The checkpoint after a reset. The batch counter carries on, so a replay publishes new
    batches instead of overwriting the ones already read."""
    return Checkpoint(positions=positions, batch=current.batch if current else 0,
                      run_id=note, committed_at=int(time.time() * 1000),
                      partition=current.partition if current else None,
                      interval_end=current.interval_end if current else None)
