"""Kinesis checkpoint positions come from what the readers saw, not from the plan."""


def next_positions(plan, summaries, base_positions):
    """``{stream:shard: {"after": seq} | {"at_timestamp": ms} | {"finished": true}}``."""
    from .planner import NO_BOUND
    positions = dict(base_positions or {})
    for split in plan.splits:
        s = summaries[split.id]
        if s.get("finished"):
            positions[split.key] = {"finished": True}
        elif s.get("last_seq"):
            positions[split.key] = {"after": s["last_seq"]}
        elif split.stop_before < NO_BOUND and "after" not in positions.get(split.key, {}):
            # Nothing arrived before the bound: continue from the bound.
            positions[split.key] = {"at_timestamp": split.stop_before}
    for key in plan.source_info.get("expired_keys", []):
        positions.pop(key, None)
    return positions
