"""One partition's range as Spark's Kafka source resolves it (``KafkaOffsetReaderAdmin``,
``KafkaSourceRDD.resolveRange``): used when a read given as Spark options is planned
(``spark_read``), when Spark plans its input partitions on the driver (``late.resolve``:
timestamps become offsets and the range is checked) and when a task binds ``earliest`` /
``latest`` (``late.bind``). Pure: it gets the watermarks and a timestamp look-up, so the
executor side never loads the planner."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DataLossError, PlanError
from .spark_options import EARLIEST, LATEST, spark_tp

if TYPE_CHECKING:
    from collections.abc import Callable


def bind_range(key: str, start: dict[str, int], stop: dict[str, int], low: int, high: int, *,
               no_match_policy: str, fail_on_data_loss: bool,
               lookup: Callable[[int], int | None]) -> tuple[int, int]:
    """One partition's range as Spark resolves it: -2/-1 are the log start / end, timestamps
    go through ``lookup`` (``offsetsForTimes``: None when no record is at or after), then the
    data-loss, order and bound checks. Used at plan time and by late binding alike."""
    def at(spec: dict[str, int], starting: bool) -> int:
        off = by_offset(key, spec, starting, no_match_policy, lookup)["offset"]
        return low if off == EARLIEST else high if off == LATEST else off

    first, last = at(start, True), at(stop, False)
    if first < low:
        if fail_on_data_loss:
            raise DataLossError(lost(key, first, low))
        first = low
    check_range(key, first, last, high)
    return first, last


def by_offset(key: str, spec: dict[str, int], starting: bool, no_match_policy: str,
              lookup: Callable[[int], int | None]) -> dict[str, int]:
    """A side's spec with its timestamp looked up (``offsetsForTimes``), as Spark's
    ``fetchSpecificTimestampBasedOffsets`` does on the driver: the offset found, or, with no
    record at or after it, ``latest`` (-1; a start fails instead unless the strategy says
    latest). An offset spec is returned as it is."""
    if "offset" in spec:
        return spec
    found = lookup(spec["timestamp"])
    if found is None:
        if starting and no_match_policy == "error":
            raise PlanError(no_match(key, spec["timestamp"]))
        return {"offset": LATEST}
    return {"offset": int(found)}


def no_match(key: str, ms: int) -> str:
    return (f"No offset matched from request of topic-partition {spark_tp(key)} and timestamp "
            f"{ms} (set startingOffsetsByTimestampStrategy to latest to start at the end "
            "instead)")


def lost(key: str, start: int, low: int) -> str:
    return (f"{key}: records expired between offset {start} and {low}: some data may have "
            "been lost because they are not available in Kafka any more (set the option "
            "failOnDataLoss to false to start at the earliest available offset)")


def check_range(key: str, start: int, stop: int, high: int) -> None:
    topic, _, part = key.rpartition(":")
    if start > stop:  # Spark's RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET
        raise PlanError(
            f"The resolved start offset {start} is greater than the resolved end offset {stop} "
            f"for topic {topic} partition {part}. There may be multiple reasons: 1. Start "
            "offset is set to too big a value that after resolution, end offset is smaller "
            "than it. There are multiple input cases: (a) Start offset is set to a timestamp, "
            "and the end offset is set to an index. (b) Start offset is set to an index, and "
            "the end offset is set to a timestamp. (c) Start offset is set, and the end offset "
            "is set to latest. 2. The Kafka topic partition is broken.")
    if stop > high:
        raise PlanError(f"{key}: ending offset {stop} is beyond the latest offset {high}; a "
                        "batch read cannot wait for records not yet written")
