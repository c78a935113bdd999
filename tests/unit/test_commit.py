"""Verification catches what a broken read would leave: missing, duplicated or foreign records,
unfinished splits; the checkpoint refuses to advance over another writer."""
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamslice.commit.checkpoint import Checkpoint, advance
from streamslice.commit.manifest import read_manifest
from streamslice.commit.protocol import publish_once
from streamslice.commit.verify import verify
from streamslice.errors import CommitError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import OutputTarget, ReadPlan
from streamslice.reading.staging import Staging
from streamslice.reading.stats import SplitSummary
from tests.support.checks import present


def make_plan(batch=1, base=None, dataset="/nowhere"):
    splits = [KafkaSplit(0, "t", 0, 0, 3), KafkaSplit(1, "t", 0, 3, 5),
              KafkaSplit(2, "t", 1, 10, 12)]
    return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=0,
                    splits=splits, partition=f"batch={batch:08d}", batch=batch,
                    base_checkpoint=base, next_positions={"t:0": 5, "t:1": 12},
                    output=OutputTarget(dataset))


def stage(tmp_path, rows, summaries):
    st = Staging(str(tmp_path / "staging"))
    (tmp_path / "staging" / "data").mkdir(parents=True)
    table = pa.table({"topic": ["t"] * len(rows), "partition": [p for p, _ in rows],
                      "offset": [o for _, o in rows]},
                     schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                       ("offset", pa.int64())]))
    pq.write_table(table, tmp_path / "staging" / "data" / "part-0.parquet")
    for s in summaries:
        st.write_summary(s.split, s)
    return st


def summary(split, records, reached=True):
    return SplitSummary(split.id, split.key, split.start, split.stop, records=records,
                        reached_stop=reached)


GOOD_ROWS = [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 10), (1, 11)]


def good_summaries(plan):
    return [summary(s, s.stop - s.start) for s in plan.splits]


def test_good_staging_verifies_and_publishes(tmp_path):
    plan = make_plan(dataset=str(tmp_path / "ds"))
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    figures = verify(plan, st)
    assert figures.records == 7
    assert figures.per_key["t:0"] == {"records": 5, "min": 0, "max": 4}
    manifest = publish_once(plan, st, run_id="r1", now_ms=1)
    assert manifest.published == {"uri": str(tmp_path / "ds" / "batch=00000001")}
    assert read_manifest(str(tmp_path / "ds"), "batch=00000001") == \
        replace(manifest, published=None).to_dict()
    assert manifest.records == 7
    assert not (tmp_path / "staging").exists()


def test_a_retried_commit_recognises_its_own_publish(tmp_path):
    """The staging area is gone after a publish: the same plan finds its manifest, another
    plan for the same partition is refused (its data was never published)."""
    plan = make_plan(dataset=str(tmp_path / "ds"))
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    first = publish_once(plan, st, run_id="r1", now_ms=1)
    assert publish_once(plan, st, run_id="r1", now_ms=2) == first
    other = make_plan(dataset=str(tmp_path / "ds"), base={"batch": 0})
    with pytest.raises(CommitError, match="was not published from this plan"):
        publish_once(other, st, run_id="r2", now_ms=3)


@pytest.mark.parametrize("rows, summaries_change, message", [
    (GOOD_ROWS[:-1], None, "t:1: 1 records staged, readers kept 2"),
    (GOOD_ROWS + [(1, 11)], None, "t:1: 3 records staged, readers kept 2"),
    (GOOD_ROWS[:-1] + [(1, 13)], None, "t:1: staged offsets 10..13 fall outside the plan"),
    (GOOD_ROWS, ("drop", 1), "split 1 (t:0) left no summary"),
    (GOOD_ROWS, ("unfinished", 2), "split 2 (t:1) did not reach its stop"),
])
def test_verification_failures(tmp_path, rows, summaries_change, message):
    plan = make_plan()
    sums = good_summaries(plan)
    if summaries_change:
        what, idx = summaries_change
        if what == "drop":
            sums.pop(idx)
        else:
            sums[idx].reached_stop = False
    st = stage(tmp_path, rows, sums)
    with pytest.raises(CommitError, match=re.escape(message)):
        verify(plan, st)


def test_an_empty_data_folder_is_a_verification_failure_not_a_crash(tmp_path):
    """What a read killed before any split's file was in place leaves."""
    plan = make_plan()
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan)[:1])
    (tmp_path / "staging" / "data" / "part-0.parquet").unlink()
    with pytest.raises(CommitError, match=re.escape("t:0: 0 records staged, readers kept 3")):
        verify(plan, st)


def test_republish_replaces_the_partition(tmp_path):
    for rows in (GOOD_ROWS, GOOD_ROWS):
        plan = make_plan(dataset=str(tmp_path / "ds"))
        st = stage(tmp_path, rows, good_summaries(plan))
        publish_once(plan, st, run_id="r", now_ms=0)
    files = sorted(p.name for p in (tmp_path / "ds" / "batch=00000001").iterdir())
    assert files == ["_manifest.json", "part-0.parquet"]
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["batch=00000001"]
    assert list((tmp_path / "_streamslice" / "ds" / "trash").iterdir()) == []


def test_trash_a_crash_left_is_removed_and_dead_letters_live_outside_the_dataset(tmp_path):
    plan = make_plan(dataset=str(tmp_path / "ds"))
    crashed = tmp_path / "_streamslice" / "ds" / "trash" / "batch=00000001-deadbeef"
    crashed.mkdir(parents=True)
    (crashed / "old.parquet").write_bytes(b"old rows")
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    dead = pa.table({"value": [b"x"], "error": ["bad"]})
    st.write_dead_letters(0, dead)
    sums = good_summaries(plan)
    sums[0].dead_letters = 1
    st.write_summary(0, sums[0])
    manifest = publish_once(plan, st, run_id="r", now_ms=0)
    assert not crashed.exists()
    assert manifest.dead_letter_uri == str(tmp_path / "_streamslice/ds/dead_letter/"
                                                         "batch=00000001")
    assert pq.read_table(manifest.dead_letter_uri).num_rows == 1
    assert sorted(p.name for p in (tmp_path / "ds" / "batch=00000001").iterdir()) == \
        ["_manifest.json", "part-0.parquet"]
    # the work area holds Parquet, but none that a glob of the whole output reads as data
    assert list((tmp_path / "_streamslice").rglob("*.parquet")) == []


def test_any_publish_removes_the_trash_of_partitions_in_place_again(tmp_path):
    """A run killed after renaming its partition in and never retried (retries used up, or
    incremental: its batch is never published again) leaves the replaced files in the trash;
    the next publish of any partition removes them, but keeps the trash of a partition that
    was set aside and not yet replaced (its only copy until a retry publishes it)."""
    first = make_plan(1, dataset=str(tmp_path / "ds"))
    publish_once(first, stage(tmp_path, GOOD_ROWS, good_summaries(first)), run_id="r",
                 now_ms=0)
    trash = tmp_path / "_streamslice" / "ds" / "trash"
    left = {"batch=00000001-0badf00d": True, "batch=00000003-0badf00d": False}
    for name in left:
        (trash / name).mkdir(parents=True)
        pq.write_table(pa.table({"offset": [1]}), trash / name / "part-0.parquet")
    second = make_plan(2, dataset=str(tmp_path / "ds"))
    publish_once(second, stage(tmp_path, GOOD_ROWS, good_summaries(second)), run_id="r",
                 now_ms=0)
    assert sorted(p.name for p in trash.iterdir()) == ["batch=00000003-0badf00d"]


def test_checkpoint_advances_only_from_the_planned_base():
    first = present(advance(None, make_plan(1), now_ms=1, run_id="r1"))
    assert first.positions == {"t:0": 5, "t:1": 12} and first.batch == 1
    second = present(advance(first, make_plan(2, base=first.to_dict()), now_ms=2, run_id="r2"))
    assert second.batch == 2
    with pytest.raises(CommitError, match="checkpoint moved since this run was planned"):
        advance(second, make_plan(2, base=first.to_dict()), now_ms=3)
    assert Checkpoint.from_dict(json.loads(json.dumps(second.to_dict()))) == second


def test_a_crash_after_the_rename_leaves_a_retry_that_still_succeeds(tmp_path):
    """The partition is in place but part of the staging area survived (the crash came before
    its removal): the retry finds its own manifest instead of failing verification."""
    plan = make_plan(dataset=str(tmp_path / "ds"))
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    first = publish_once(plan, st, run_id="r1", now_ms=1)
    (tmp_path / "staging" / "_summary").mkdir(parents=True)  # what the crash left behind
    assert publish_once(plan, st, run_id="r1", now_ms=2) == first


def test_a_cleared_run_with_its_saved_plan_republishes(tmp_path):
    """Reprocessing a run (Airflow clears it; the plan is reused) stages a complete new
    attempt: it replaces the partition rather than yielding to the earlier publish."""
    plan = make_plan(dataset=str(tmp_path / "ds"))
    first = publish_once(plan, stage(tmp_path, GOOD_ROWS, good_summaries(plan)),
                         run_id="r1", now_ms=1)
    again = publish_once(plan, stage(tmp_path, GOOD_ROWS, good_summaries(plan)),
                         run_id="r1", now_ms=2)
    assert (first.committed_at, again.committed_at) == (1, 2)
    assert present(read_manifest(str(tmp_path / "ds"), "batch=00000001"))["committed_at"] == 2


def _group_by(table, group, position):
    """What Arrow's own (Acero) group-by says, the answer the kernels-only count must give."""
    import pyarrow.dataset  # noqa: F401  (Acero; the code under test avoids it)

    col = position or group[0]
    aggs = [(col, "count")] + ([(position, "min"), (position, "max")] if position else [])
    out = {}
    for row in table.group_by(list(group)).aggregate(aggs).to_pylist():
        key = ":".join(str(row[g]) for g in group)
        out[key] = {"records": row[f"{col}_count"]}
        if position:
            out[key].update(min=row[f"{position}_min"], max=row[f"{position}_max"])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_counting_per_key_gives_arrows_group_by_answers(seed):
    import random

    from streamslice.commit.verify import _per_key

    rnd = random.Random(seed)
    n = rnd.choice([1, 7, 500])
    table = pa.table({
        "topic": [rnd.choice(["a", "b", None]) for _ in range(n)],
        "partition": [rnd.choice([0, 1, 2, None]) for _ in range(n)],
        "offset": [rnd.choice([None, *range(50)]) if seed % 2 else rnd.randrange(10**12)
                   for _ in range(n)]})
    table = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])  # two chunks
    for group, position in [(("topic", "partition"), "offset"), (("topic",), None),
                            (("partition",), "offset")]:
        assert _per_key(table, group, position) == _group_by(table, group, position)


def test_the_staged_parquet_files_are_found_as_pyarrow_dataset_finds_them(tmp_path):
    """Nested folders read, names starting with ``.`` or ``_`` skipped (Spark's ``_SUCCESS``
    and ``.crc``), a file that is not Parquet (a killed read's half) skipped: the same rows as
    ``pyarrow.dataset`` with ``exclude_invalid_files``."""
    import pyarrow.dataset as ds

    from streamslice.commit.verify import _parquet_columns

    plan = make_plan()
    st = stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    data = tmp_path / "staging" / "data"
    table = pq.read_table(data / "part-0.parquet")
    (data / "nested").mkdir()
    pq.write_table(table.slice(0, 2), data / "nested" / "part-1.parquet")
    pq.write_table(table, data / "_SUCCESS")
    pq.write_table(table, data / ".part-0.parquet.crc")
    (data / "_temporary").mkdir()
    pq.write_table(table, data / "_temporary" / "part-9.parquet")
    (data / "part-2.parquet").write_bytes((data / "part-0.parquet").read_bytes()[:40])
    (data / "part-3.parquet").write_bytes(b"")
    cols = ["topic", "partition", "offset"]
    ours = present(_parquet_columns(st, cols))
    theirs = ds.dataset(str(data), format="parquet", exclude_invalid_files=True).to_table(cols)
    assert ours.num_rows == 9
    assert sorted(ours.to_pylist(), key=str) == sorted(theirs.to_pylist(), key=str)


def test_verifying_a_staged_parquet_read_imports_no_pandas(tmp_path):
    """A run's commit verifies in a fresh task process: importing pandas (which
    ``pyarrow.dataset`` and Arrow's group-by do) was most of that process's CPU (#31)."""
    import subprocess
    import sys

    plan = make_plan()
    stage(tmp_path, GOOD_ROWS, good_summaries(plan))
    code = (
        "import sys, pyarrow.parquet as pq\n"
        "from streamslice.commit.verify import verify\n"
        "from streamslice.reading.staging import Staging\n"
        "from test_commit import make_plan, good_summaries\n"
        f"figures = verify(make_plan(), Staging({str(tmp_path / 'staging')!r}))\n"
        "print(figures.records, figures.per_key['t:1'], 'pandas' in sys.modules)\n")
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *sys.path])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.split() == ["7", "{'records':", "2,", "'min':", "10,", "'max':", "11}", "False"]
