"""Verification: the staged output is exactly what the plan asked for, before anything is
published."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import AllDeadLettersError, CommitError
from ..reading.staging import DATA
from ..sources import source_class
from .publishers import staged_format

if TYPE_CHECKING:
    from ..planning.plan import ReadPlan
    from ..reading.staging import Staging
    from ..reading.stats import SplitSummary


class KeyCount(TypedDict):
    """One split key's staged records, and the least and greatest position among them (when
    the output has a position column: an Arrow value of its type)."""

    records: int
    min: NotRequired[Any]
    max: NotRequired[Any]


@dataclass(frozen=True)
class Verified:
    """What a verified staging area holds: the readers' summaries (in plan order), the staged
    records per split key (with their min/max position), and the totals."""

    summaries: list[SplitSummary]
    per_key: dict[str, KeyCount]
    records: int
    dead_letters: int


def verify(plan: ReadPlan[Any], staging: Staging) -> Verified:
    """Every split reached its stop, and the staged records are exactly what the readers kept:
    per split key, the staged count equals the summaries' count (no gap, no duplicate) and every
    position lies inside the plan's ranges. Returns the figures; raises CommitError."""
    summaries, problems = staging.summaries(), []
    for split in plan.splits:
        s = summaries.get(split.id)
        if s is None:
            problems.append(f"split {split.id} ({split.key}) left no summary")
        elif not s.reached_stop:
            problems.append(f"split {split.id} ({split.key}) did not reach its stop")
        elif s.start != split.start or s.stop != split.end:
            problems.append(f"split {split.id} ({split.key}) summary is for another range")
    extra = set(summaries) - {s.id for s in plan.splits}
    if extra:
        problems.append(f"summaries for splits not in the plan: {sorted(extra)}")
    expected: dict[str, int] = {}
    for split in plan.splits:
        found = summaries.get(split.id)
        expected[split.key] = expected.get(split.key, 0) + (found.records if found else 0)
    staged = staged_counts(plan, staging)
    for key in sorted(set(expected) | set(staged)):
        count = staged.get(key)
        got, want = count["records"] if count else 0, expected.get(key, 0)
        if got != want:
            problems.append(f"{key}: {got} records staged, readers kept {want}")
        lo, hi = (count.get("min"), count.get("max")) if count else (None, None)
        ranges = [r for s in plan.splits if s.key == key
                  for r in [s.offset_range] if r is not None]
        if lo is not None and hi is not None and ranges and not (
                min(r[0] for r in ranges) <= lo and hi < max(r[1] for r in ranges)):
            problems.append(f"{key}: staged offsets {lo}..{hi} fall outside the plan")
    dead = staging.dead_letter_rows()
    dead_expected = sum(summaries[s.id].dead_letters for s in plan.splits if s.id in summaries)
    if dead != dead_expected:
        problems.append(f"{dead} dead letters staged, readers reported {dead_expected}")
    if problems:
        raise CommitError("staged output failed verification: " + "; ".join(problems))
    check_some_decoded(plan, staging, sum(expected.values()), dead)
    return Verified([summaries[s.id] for s in plan.splits], staged, sum(expected.values()), dead)


def check_some_decoded(plan: ReadPlan[Any], staging: Staging, records: int, dead: int) -> None:
    """A run that read records and decoded none is not a success, unless the pipeline says
    such runs are expected (``format.allow_all_dead_letters``): a format that does not match
    the topic (a schema, a Protobuf message, a subject) dead-letters everything while the
    run would otherwise pass."""
    if records or not dead or (plan.decode or {}).get("allow_all_dead_letters"):
        return
    first = "; ".join(staging.dead_letter_reasons())
    raise AllDeadLettersError(
        f"{plan.partition}: all {dead} records the run read are dead letters, none decoded "
        f"(first reasons: {first}); the format most likely does not match the records. "
        "Nothing is published. If such runs are expected, set "
        "format.allow_all_dead_letters: true")


def staged_counts(plan: ReadPlan[Any], staging: Staging) -> dict[str, KeyCount]:
    """Records per split key (and min/max position where the source has one) from the
    staged files."""
    group, position = source_class(plan.source).readers().verify_columns
    info = staging.fs.get_file_info(f"{staging.root}/{DATA}")
    if info.type == pafs.FileType.NotFound:
        return {}
    cols = list(group) + ([position] if position else [])
    output_format = staged_format(plan.output)
    if output_format == "parquet":
        table = _parquet_columns(staging, cols)
    else:
        table = _dataset_columns(staging, output_format, cols)
    if table is None or table.num_rows == 0:
        return {}
    return _per_key(table, group, position)


def _parquet_columns(staging: Staging, cols: list[str]) -> pa.Table | None:
    """The staged Parquet files' ``cols``, found and skipped as ``pyarrow.dataset`` would
    (recursively, no name or folder starting with ``.`` or ``_``, no file that is not
    Parquet, e.g. one a killed read left half written) without importing it: it and Arrow's
    group-by import pandas, most of a committing task process's CPU."""
    base = f"{staging.root}/{DATA}"
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    tables = []
    for found in sorted(staging.fs.get_file_info(selector), key=lambda i: i.path):
        inside = found.path[len(base):].strip("/").split("/")
        if found.type != pafs.FileType.File or any(p[:1] in (".", "_") for p in inside):
            continue
        try:
            with staging.fs.open_input_file(found.path) as f:
                tables.append(pq.ParquetFile(f).read(columns=cols))
        except (pa.ArrowInvalid, OSError):
            continue
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


def _dataset_columns(staging: Staging, output_format: str, cols: list[str]) -> pa.Table | None:
    import pyarrow.dataset as ds  # here: it imports pandas (~0.3 s a process)

    dataset = ds.dataset(f"{staging.root}/{DATA}", format=output_format,
                         filesystem=staging.fs, exclude_invalid_files=True)
    if not dataset.files:  # e.g. a read killed before any split's file was in place
        return None
    return dataset.to_table(columns=cols)


def _per_key(table: pa.Table, group: tuple[str, ...], position: str | None
             ) -> dict[str, KeyCount]:
    """Per key (the group columns' values joined by ``:``): the count of the position column's
    values (of the first group column's without one), and its min and max. Sorted by the
    group columns and cut where one of them changes, with compute kernels alone: no Acero
    group-by and no Python value turned into Arrow's, as either imports pandas."""
    rows = table.take(pc.sort_indices(table, sort_keys=[(g, "ascending") for g in group]))
    ends: set[int] = set()
    for g in group:
        ends.update(pc.run_end_encode(rows.column(g).combine_chunks()).run_ends.to_pylist())
    counted = rows.column(position or group[0]).combine_chunks()
    out: dict[str, KeyCount] = {}
    begin = 0
    for end in sorted(ends):
        key = ":".join(str(rows.column(g)[begin].as_py()) for g in group)
        values = counted.slice(begin, end - begin)
        count: KeyCount = {"records": pc.count(values).as_py()}
        if position:
            bounds = pc.min_max(values)
            count["min"], count["max"] = bounds["min"].as_py(), bounds["max"].as_py()
        out[key] = count
        begin = end
    return out
