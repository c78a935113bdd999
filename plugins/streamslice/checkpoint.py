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

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        if not data:
            return None
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__ if k in data})


def advance(current, plan, *, now_ms, run_id=None):
    """The checkpoint after ``plan`` is published, checked against what the plan started from.

    Incremental: the checkpoint must still be the one the plan read (one writer at a time).
    Interval: runs are independent; the checkpoint follows the latest interval committed.
    """
    if plan.mode == "incremental":
        base = Checkpoint.from_dict(plan.base_checkpoint)
        if _identity(current) != _identity(base):
            raise CommitError(
                f"the checkpoint moved since this run was planned (planned from batch "
                f"{base.batch if base else 0}, now at batch {current.batch if current else 0}); "
                "nothing was advanced. Re-run to plan from the new checkpoint.")
        positions = dict(current.positions) if current else {}
        positions.update(plan.next_positions)
        return Checkpoint(positions=positions, batch=plan.batch, run_id=run_id,
                          committed_at=now_ms, partition=plan.partition)
    if plan.mode == "interval":
        if current and current.interval_end and current.interval_end > plan.interval.end:
            return current  # a backfill of an older interval leaves the newest in place
        positions = dict(current.positions) if current else {}
        positions.update(plan.next_positions)
        return Checkpoint(positions=positions, batch=(current.batch if current else 0),
                          run_id=run_id, committed_at=now_ms, partition=plan.partition,
                          interval_end=plan.interval.end)
    return current


def _identity(cp):
    return (cp.batch, cp.positions) if cp else (0, {})
