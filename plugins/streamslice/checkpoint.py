"""The checkpoint model: committed next positions per split key, and how a commit advances it.

Where it is kept is the glue's business (Airflow asset state); this module only says what it is.
The whole checkpoint is one value written in one step, never read-modify-written key by key.
"""
from dataclasses import asdict, dataclass, field

from .errors import CommitError


@dataclass
class Checkpoint:
    positions: dict = field(default_factory=dict)  # Kafka "topic:partition" → next offset
    batch: int = 0  # committed incremental batches
    run_id: str = None
    committed_at: int = None  # epoch ms
    partition: str = None  # the output partition last published
    interval_end: int = None  # interval mode: the latest interval committed
    source_state: dict = field(default_factory=dict)  # e.g. Kinesis: the resolved initial position

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        if not data:
            return None
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__ if k in data})


def advance(current, plan, *, now_ms, run_id=None, positions=None):
    """The checkpoint after ``plan`` is published, checked against what the plan started from.

    Incremental: the checkpoint must still be the one the plan read (one writer at a time).
    Interval: runs are independent; the checkpoint follows the latest interval committed.
    ``positions`` is the complete new mapping when the readers, not the plan, know it (Kinesis).
    """
    state = dict(current.source_state) if current and current.source_state else {}
    if plan.source_info.get("initial_position") and "initial_position" not in state:
        state["initial_position"] = plan.source_info["initial_position"]
    if plan.mode == "incremental":
        base = Checkpoint.from_dict(plan.base_checkpoint)
        if _identity(current) != _identity(base):
            raise CommitError(
                f"the checkpoint moved since this run was planned (planned from batch "
                f"{base.batch if base else 0}, now at batch {current.batch if current else 0}); "
                "nothing was advanced. Re-run to plan from the new checkpoint.")
        merged = _merge(current, plan, positions)
        return Checkpoint(positions=merged, batch=plan.batch, run_id=run_id,
                          committed_at=now_ms, partition=plan.partition, source_state=state)
    if plan.mode == "interval":
        if current and current.interval_end and current.interval_end > plan.interval.end:
            return current  # a backfill of an older interval leaves the newest in place
        merged = _merge(current, plan, positions)
        return Checkpoint(positions=merged, batch=(current.batch if current else 0),
                          run_id=run_id, committed_at=now_ms, partition=plan.partition,
                          interval_end=plan.interval.end, source_state=state)
    return current


def _merge(current, plan, positions):
    if positions is not None:
        return dict(positions)
    merged = dict(current.positions) if current else {}
    merged.update(plan.next_positions)
    return merged


def _identity(cp):
    return (cp.batch, cp.positions) if cp else (0, {})
