"""The packing rule (``planning.packing``): Spark's own rule for packing small files into tasks,
in records. Spark's cases are FileSourceStrategySuite's (its session has default parallelism
1; sizes, ``spark.sql.files.maxPartitionBytes`` and ``openCostInBytes`` as there), then ours."""
import random
from typing import TYPE_CHECKING

import pytest

from streamslice.planning.packing import SPLIT_COST, TASK_RECORDS, pack_splits

if TYPE_CHECKING:
    from streamslice.records import JsonObject


def files(groups, sizes):
    """Groups of indexes as groups of sizes, to read like Spark's layouts."""
    return [[sizes[i] for i in g] for g in groups]


@pytest.mark.parametrize("sizes, most, cost, layout", [
    # "unpartitioned table, single partition": ten 1-byte files in one partition (defaults)
    ([1] * 10, 128 * 2**20, 4 * 2**20, [[1] * 10]),
    # "unpartitioned table, multiple partitions": [(5, 5), (5)]
    ([5, 5, 5], 11, 1, [[5, 5], [5]]),
    # "Unpartitioned table, many files that get split": [(file1), (file2, file3), (file4,
    # file5), (file6)]
    ([2, 2, 1, 1, 1, 1], 4, 1, [[2], [2, 1], [1, 1], [1]]),
    # "SPARK-15654 do not split non-splittable files": sizes 3, 1, 1 → [(3), (1, 1)]
    ([3, 1, 1], 2, 0, [[3], [1, 1]]),
])
def test_sparks_own_layouts(sizes, most, cost, layout):
    groups = pack_splits(sizes, 1, split_cost=cost, task_records=most)
    assert files(groups, sizes) == layout


def test_largest_first_and_each_split_once():
    sizes = [3, None, 0, 9, 3, None, 1]
    groups = pack_splits(sizes, 1, split_cost=1, task_records=10)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    assert groups == [[3], [0, 4, 6, 2], [1], [5]]  # 9; 3, 3, 1, 0; unknown sizes alone


def test_a_small_read_has_a_task_per_slot():
    """Three hundred partitions of ten records: about one task per core (whole splits: 60
    for 64 cores), not three hundred."""
    sizes = [10] * 270 + [0] * 30
    for slots in (1, 2, 8, 64):
        groups = pack_splits(sizes, slots)
        assert 0.9 * slots <= len(groups) <= slots
        assert max(map(len, groups)) <= 1.25 * min(map(len, groups))


def test_a_large_read_keeps_its_parallelism_and_large_splits_their_own_task():
    sizes = [TASK_RECORDS * 2] * 3 + [50_000] * 40
    groups = pack_splits(sizes, 2)
    assert groups[:3] == [[0], [1], [2]]  # larger than a task: alone, as before
    held = [sum(sizes[i] + SPLIT_COST for i in g) for g in groups[3:]]
    assert all(h <= TASK_RECORDS + SPLIT_COST for h in held)
    assert len(groups) == 3 + 3  # 19 + 19 + 2 splits of 50,000
    # as many tasks as slots when they are many
    assert len(pack_splits([50_000] * 40, 16)) == 20  # two splits a task: 104,000 ≤ 131,250


def test_the_costs_the_readme_states():
    """A split costs its records plus 2,000; a task holds at most 1M records, the Kafka
    planner's default max_records_per_split."""
    from streamslice.kafka.source import KafkaSource
    assert (SPLIT_COST, TASK_RECORDS) == (2_000, 1_000_000)
    assert KafkaSource.__dataclass_fields__["max_records_per_split"].default == TASK_RECORDS


def test_no_splits_and_unknown_sizes():
    assert pack_splits([], 4) == []
    assert pack_splits([None, None], 4) == [[0], [1]]  # Kinesis shards: a task each


@pytest.mark.parametrize("seed", range(20))
def test_any_sizes_are_packed_exactly_once_within_the_caps(seed):
    """Random plans (sizes from empty to ten times a task, unknown ones, costs and caps of
    any size): every split in exactly one task; a task of several splits holds at most what
    Spark's rule lets in (the cap, plus the last split's cost); unknown sizes alone."""
    rng = random.Random(seed)
    for _ in range(100):
        cost, cap = rng.choice([0, 1, SPLIT_COST]), rng.choice([1, 50, 10**4, TASK_RECORDS])
        sizes = [rng.choice([None, 0, rng.randrange(1, 20), rng.randrange(10 * cap + 1)])
                 for _ in range(rng.randrange(120))]
        slots = rng.randrange(1, 70)
        groups = pack_splits(sizes, slots, split_cost=cost, task_records=cap)
        flat = [i for g in groups for i in g]
        assert len(flat) == len(set(flat)) == len(sizes)
        assert sorted(flat) == list(range(len(sizes)))
        assert all(groups)
        known = [s for s in sizes if s is not None]
        most = min(cap, max(cost, sum(s + cost for s in known) // slots))
        for g in groups:
            sized = [s for s in (sizes[i] for i in g) if s is not None]
            if len(sized) < len(g):
                assert len(g) == 1
            elif len(g) > 1:
                assert sum(s + cost for s in sized) <= most + cost
        assert len(groups) <= len(sizes)


def test_unknown_and_unbound_splits_keep_their_own_task():
    """What the data source packs is each split's ``size``: a Kinesis shard's is unknown, and
    so is a Kafka split whose offsets a task binds (Spark options' earliest/latest)."""
    from streamslice.sources import source_class
    kafka = source_class("kafka").serializer().from_dict
    kinesis = source_class("kinesis").serializer().from_dict
    shard: JsonObject = {"stream": "s", "start": {"type": "TRIM_HORIZON"}, "stop_before": 1}
    splits = [kinesis({"id": i, "shard_id": f"shardId-{i:012d}", **shard}) for i in range(3)]
    splits.append(kafka({"id": 3, "topic": "t", "partition": 0, "start": -2, "stop": -1,
                         "unresolved": {"start": {"offset": -2}, "stop": {"offset": -1}}}))
    splits += [kafka({"id": i, "topic": "t", "partition": i, "start": 0, "stop": 5})
               for i in range(4, 10)]
    groups = pack_splits([s.size for s in splits], 2)
    assert [g for g in groups if len(g) == 1 and g[0] < 4] == [[0], [1], [2], [3]]
    assert sorted(i for g in groups for i in g) == list(range(10))
    assert groups[:2] == [[4, 5, 6], [7, 8, 9]]  # the six bound ones: a task per slot
