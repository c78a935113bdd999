"""Range splitting, as a pure function (cf. Spark's KafkaOffsetRangeCalculator)."""
from __future__ import annotations


def subsplit(start: int, stop: int, max_records: int | None) -> list[tuple[int, int]]:
    """Cut ``[start, stop)`` into the fewest near-equal ranges of at most ``max_records``.

    Empty ranges stay one (empty) range so every partition still has a split in the plan.
    """
    size = stop - start
    if size <= 0 or not max_records or size <= max_records:
        return [(start, stop)]
    parts = -(-size // max_records)
    base, extra = divmod(size, parts)
    ranges: list[tuple[int, int]] = []
    lo = start
    for i in range(parts):
        hi = lo + base + (1 if i < extra else 0)
        ranges.append((lo, hi))
        lo = hi
    return ranges
