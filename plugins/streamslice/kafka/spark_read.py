"""Planning a read given as Spark's Kafka options (``kafka.options``), the way Spark's
``KafkaOffsetReaderAdmin`` and ``KafkaOffsetRangeCalculator`` do it.

Without ``minPartitions`` / ``maxRecordsPerPartition`` every partition is one split whose
start and stop stay unresolved (``earliest``, ``latest``, timestamps): Spark's driver resolves
timestamps and checks the ranges when it plans the read, and tasks bind ``earliest`` /
``latest`` (``kafka.binding``), so each action on the DataFrame sees the topic as it is then.
With them, offsets are resolved now and ranges divided as Spark divides them.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..sources import SourcePlan
from .ranges import bind_range
from .spark_options import EARLIEST, LATEST, Side, spark_tp
from .split import KafkaSplit

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..sources import PlanRequest
    from .admin import KafkaAdmin, TopicPartition
    from .source import KafkaSource
    from .spark_options import SparkRead


def plan_spark_read(source: KafkaSource, admin: KafkaAdmin,
                    request: PlanRequest) -> SourcePlan[KafkaSplit]:
    read = source.spark
    assert read is not None
    tps = source.subscriber.partitions(admin)
    keys = [tp.key for tp in tps]
    for s in (read.start, read.stop):
        check_covers(s, keys)
    info = {"bootstrap_servers": source.bootstrap_servers, "client": source.client,
            "include_headers": read.include_headers}
    if read.min_partitions is None and read.max_records_per_partition is None:
        policy = {"no_match": read.no_match, "fail_on_data_loss": read.fail_on_data_loss}
        splits = [KafkaSplit(id=i, topic=tp.topic, partition=tp.partition, start=EARLIEST,
                             stop=LATEST, unresolved={
                                 **policy, "start": read.start.for_partition(tp.key),
                                 "stop": read.stop.for_partition(tp.key)})
                  for i, tp in enumerate(tps)]
        return SourcePlan(splits=splits, info=info)
    low, high = admin.beginning_offsets(tps), admin.end_offsets(tps)
    ranges = []
    for tp in tps:
        start, stop = bind_range(
            tp.key, read.start.for_partition(tp.key), read.stop.for_partition(tp.key),
            low[tp], high[tp], no_match_policy=read.no_match,
            fail_on_data_loss=read.fail_on_data_loss,
            lookup=_offsets_for_time(admin, tp))
        ranges.append((tp, start, stop))
    splits = []
    for tp, lo, hi in divide(ranges, read):
        splits.append(KafkaSplit(id=len(splits), topic=tp.topic, partition=tp.partition,
                                 start=lo, stop=hi, log_start=low[tp], high_watermark=high[tp]))
    return SourcePlan(splits=splits, info=info)


def _offsets_for_time(admin: KafkaAdmin, tp: TopicPartition) -> Callable[[int], int | None]:
    def lookup(ms: int) -> int | None:
        found: int | None = admin.offsets_for_times({tp: ms}, ends={tp: None})[tp]
        return found
    return lookup


def check_covers(side: Side, keys: list[str]) -> None:
    """Spark: "If startingOffsets contains specific offsets, you must specify all
    TopicPartitions." (also for endingOffsets and the by-timestamp options)."""
    if side.kind not in ("offsets", "timestamps") or set(side.offsets) == set(keys):
        return
    given = ", ".join(sorted(spark_tp(k) for k in side.offsets))
    assigned = ", ".join(sorted(spark_tp(k) for k in keys))
    raise ConfigError(f"If {side.option} contains specific offsets, you must specify all "
                      f"TopicPartitions. Use -1 for latest, -2 for earliest. Specified: "
                      f"[{given}] Assigned: [{assigned}]")


def divide(ranges: list[tuple[Any, int, int]], read: SparkRead) -> list[tuple[Any, int, int]]:
    """Spark's ``KafkaOffsetRangeCalculator.getRanges`` (empty ranges are dropped)."""
    ranges = [r for r in ranges if r[2] - r[1] > 0]
    if read.max_records_per_partition:
        cap = read.max_records_per_partition
        ranges = [p for r in ranges for p in _split(r, math.ceil((r[2] - r[1]) / cap))]
    want = read.min_partitions
    if want and want > len(ranges):
        total = sum(hi - lo for _, lo, hi in ranges)
        unsplit = [r for r in ranges if _parts(r[2] - r[1], total, want) == 1]
        split_total = total - sum(hi - lo for _, lo, hi in unsplit)
        split_min = max(want - len(unsplit), 1)
        ranges = [p for r in ranges
                  for p in _split(r, _parts(r[2] - r[1], split_total, split_min))]
    return [r for r in ranges if r[2] - r[1] > 0]


def _parts(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round: half up.
    return max(int(math.floor(size / total * min_parts + 0.5)), 1) if total else 1


def _split(r: tuple[Any, int, int], parts: int) -> list[tuple[Any, int, int]]:
    tp, start, until = r
    remaining, out = until - start, []
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, until)
        out.append((tp, start, end))
        start = end
    return out
