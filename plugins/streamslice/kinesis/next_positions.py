"""Kinesis checkpoints: next positions come from what the readers saw, not from the plan; a
reset points every shard at a new start.

Checkpoint values per shard: ``{"after": seq}``, ``{"at": seq}``, ``{"at_timestamp": ms}`` or
``{"finished": true}``; shards without a value start at the checkpoint's
``source_state.initial_position`` (children once their parents are finished)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..sources import ResetTarget
from .positions import NO_BOUND, AtTimestamp, TrimHorizon

if TYPE_CHECKING:
    from ..planning.plan import ReadPlan
    from ..reading.stats import SplitSummary
    from ..splits import Positions
    from .split import KinesisSplit

_SEQ = re.compile(r"\d{1,128}")


def next_positions(plan: ReadPlan[KinesisSplit], summaries: dict[int, SplitSummary],
                   base_positions: Positions | None) -> Positions:
    """``{stream:shard: {"after": seq} | {"at_timestamp": ms} | {"finished": true}}``."""
    positions = dict(base_positions or {})
    for split in plan.splits:
        s = summaries[split.id].extra  # the figures of ``KinesisSplitReader.summary_extra``
        if s.get("finished"):
            positions[split.key] = {"finished": True}
        elif s.get("last_seq"):
            positions[split.key] = {"after": s["last_seq"]}
        elif split.stop_before < NO_BOUND and not _read_before(positions.get(split.key)):
            # Nothing arrived before the bound: continue from the bound.
            positions[split.key] = {"at_timestamp": split.stop_before}
    for key in plan.source_info.get("expired_keys", []):
        positions.pop(key, None)
    return positions


def _read_before(value: dict[str, Any] | None) -> bool:
    """A sequence-number position already says where to continue."""
    return bool(value) and ("after" in value or "at" in value)  # type: ignore[operator]


def reset_target(to: Any, keys: list[str], now_ms: int) -> ResetTarget:
    """``to``: ``TRIM_HORIZON`` | ``earliest`` | ``LATEST`` | ``latest`` | ``{timestamp: ms}`` |
    ``{offsets: {"stream:shardId-…": sequence number}}``. ``keys`` are the shards read now."""
    if to in ("TRIM_HORIZON", "earliest"):
        return ResetTarget({}, {"initial_position": TrimHorizon().to_dict()})
    if to in ("LATEST", "latest"):
        return ResetTarget({}, {"initial_position": AtTimestamp(now_ms).to_dict()})
    if isinstance(to, dict) and set(to) == {"timestamp"}:
        return ResetTarget({}, {"initial_position": AtTimestamp(int(to["timestamp"])).to_dict()})
    if isinstance(to, dict) and set(to) == {"offsets"} and isinstance(to["offsets"], dict):
        positions = {}
        for key, seq in to["offsets"].items():
            if key not in keys:
                raise ConfigError(f"reset target: {key!r} is not a shard this pipeline reads "
                                  f"(stream:shardId, one of {', '.join(sorted(keys))})")
            if not _SEQ.fullmatch(str(seq)):
                raise ConfigError(f"reset target: {key}: {seq!r} is not a sequence number")
            positions[key] = {"at": str(seq)}
        return ResetTarget(positions, {"initial_position": TrimHorizon().to_dict()})
    raise ConfigError(f"reset target {to!r}: give TRIM_HORIZON, LATEST, a timestamp or "
                      "sequence numbers ({\"stream:shardId-…\": \"seq\"})")
