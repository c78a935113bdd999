"""Small splits packed into fewer Spark tasks, as a pure function over split sizes: the
counterpart of ``subsplit``, which cuts large ranges (cf. Spark's KafkaOffsetRangeCalculator).

A Spark task of a Python data source costs far more than the JVM task of Spark's own Kafka
source: a 300-partition read of a few records each spent most of its time starting tasks
(``bench/many_splits.py``). The rule is the one Spark packs small files into tasks with
(``FilePartition.maxSplitBytes`` and ``getFilePartitions``), in records instead of bytes: every
split costs its records plus ``split_cost`` (Spark's ``spark.sql.files.openCostInBytes``); a
task holds at most ``max(split_cost, total cost / slots)`` and never more than
``task_records`` (``spark.sql.files.maxPartitionBytes``), so a small read still has a task per
slot and a large one keeps its parallelism; splits go largest first into the current task
until the next would not fit ("next fit decreasing"). A split of unknown size (a Kinesis shard)
keeps a task of its own. Each split is still read, summarised and staged on its own, so
verification, commit and retries see the same splits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

# What a split costs beyond its records (its client, summary and file), in records; measured
# as about 1,500 here (bench/many_splits.py: ~5 ms a split, ~3.5 µs a record).
SPLIT_COST = 2_000
# The most a task of packed splits holds: as much as a split holds at most before the Kafka
# planner cuts it (``max_records_per_split``' default), a few seconds of reading next to the
# ~120 ms a Spark task of this data source costs here (bench/many_splits.py: 300 one-split
# tasks in 37-46 s).
TASK_RECORDS = 1_000_000


def pack_splits(sizes: Sequence[int | None], slots: int, *, split_cost: int = SPLIT_COST,
                task_records: int = TASK_RECORDS) -> list[list[int]]:
    """Split indexes grouped into tasks: ``sizes`` are the splits' records (None: unknown),
    ``slots`` the cores Spark runs tasks on. Every index is in exactly one group; groups and
    their members come largest first."""
    known = sorted(((i, s) for i, s in enumerate(sizes) if s is not None),
                   key=lambda pair: (-pair[1], pair[0]))
    total = sum(size + split_cost for _, size in known)
    most = min(task_records, max(split_cost, total // max(1, slots)))
    groups: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i, size in known:
        if current and held + size > most:
            groups.append(current)
            current, held = [], 0
        current.append(i)
        held += size + split_cost
    if current:
        groups.append(current)
    return groups + [[i] for i, s in enumerate(sizes) if s is None]
