"""A Kinesis split: one shard, from a start position until an arrival-time bound or shard end.

Positions are plain dicts so plans and checkpoints stay JSON:
``{"type": "TRIM_HORIZON"}``, ``{"type": "AT_TIMESTAMP", "timestamp": ms}``,
``{"type": "AT_SEQUENCE_NUMBER" | "AFTER_SEQUENCE_NUMBER", "seq": "…"}``.
Checkpoint values per shard: ``{"after": seq}``, ``{"at_timestamp": ms}`` or
``{"finished": true}`` (the shard was read to SHARD_END).
"""
from dataclasses import dataclass, field

TRIM_HORIZON = {"type": "TRIM_HORIZON"}


def at_timestamp(ms):
    return {"type": "AT_TIMESTAMP", "timestamp": int(ms)}


def after(seq):
    return {"type": "AFTER_SEQUENCE_NUMBER", "seq": str(seq)}


def from_checkpoint(value):
    """A shard's checkpoint value → the position to continue from (None when finished)."""
    if value.get("finished"):
        return None
    if "after" in value:
        return after(value["after"])
    return at_timestamp(value["at_timestamp"])


def describe(pos):
    kind = pos["type"]
    if kind == "AT_TIMESTAMP":
        from ..timeutil import iso
        return f"AT_TIMESTAMP {iso(pos['timestamp'])}"
    return f"{kind} {pos['seq']}" if "seq" in pos else kind


@dataclass
class KinesisSplit:
    id: int
    stream: str
    shard_id: str
    start: dict
    stop_before: int  # epoch ms: stop at the first record that arrived at or after this
    closed: bool = False  # the shard was closed at plan time
    parents: list = field(default_factory=list)
    stream_arn: str = None

    @property
    def key(self):
        return f"{self.stream}:{self.shard_id}"

    @property
    def size(self):
        return 0  # unknown until read

    @property
    def lag(self):
        return None
