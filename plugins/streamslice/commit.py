"""The commit protocol: verify the staged output against the plan, publish it atomically with
its manifest. The checkpoint advances only after this returns (see ``checkpoint.advance``)."""
import hashlib
import json
import uuid

import pyarrow.dataset as ds
import pyarrow.fs as pafs

from .errors import CommitError
from .staging import DATA, DEAD_LETTER, Staging

MANIFEST = "_manifest.json"
_KEYS = {"kafka": (("topic", "partition"), "offset"), "kinesis": (("stream", "shardId"), None)}


def plan_id(plan):
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


def verify(plan, staging, output_format="parquet"):
    """Every split reached its stop, and the staged records are exactly what the readers kept:
    per split key, the staged count equals the summaries' count (no gap, no duplicate) and every
    position lies inside the plan's ranges. Returns the figures; raises CommitError."""
    summaries, problems = staging.summaries(), []
    for split in plan.splits:
        s = summaries.get(split.id)
        if s is None:
            problems.append(f"split {split.id} ({split.key}) left no summary")
        elif not s.get("reached_stop"):
            problems.append(f"split {split.id} ({split.key}) did not reach its stop")
        elif (s.get("start") != _json(split.start)
              or s.get("stop") != _json(getattr(split, "stop", None))):
            problems.append(f"split {split.id} ({split.key}) summary is for another range")
    extra = set(summaries) - {s.id for s in plan.splits}
    if extra:
        problems.append(f"summaries for splits not in the plan: {sorted(extra)}")
    expected = {}
    for split in plan.splits:
        s = summaries.get(split.id) or {}
        expected[split.key] = expected.get(split.key, 0) + s.get("records", 0)
    staged = staged_counts(plan, staging, output_format)
    for key in sorted(set(expected) | set(staged)):
        got, want = staged.get(key, {}).get("records", 0), expected.get(key, 0)
        if got != want:
            problems.append(f"{key}: {got} records staged, readers kept {want}")
        lo, hi = staged.get(key, {}).get("min"), staged.get(key, {}).get("max")
        ranges = [(s.start, s.stop) for s in plan.splits if s.key == key] \
            if plan.source == "kafka" else []
        if lo is not None and ranges and not (
                min(r[0] for r in ranges) <= lo and hi < max(r[1] for r in ranges)):
            problems.append(f"{key}: staged offsets {lo}..{hi} fall outside the plan")
    dead = staging.dead_letter_rows()
    dead_expected = sum((summaries.get(s.id) or {}).get("dead_letters", 0) for s in plan.splits)
    if dead != dead_expected:
        problems.append(f"{dead} dead letters staged, readers reported {dead_expected}")
    if problems:
        raise CommitError("staged output failed verification: " + "; ".join(problems))
    return {"summaries": [summaries[s.id] for s in plan.splits], "per_key": staged,
            "records": sum(expected.values()), "dead_letters": dead}


def staged_counts(plan, staging, output_format="parquet"):
    """Records per split key (and min/max position for Kafka) from the staged files."""
    group, position = _KEYS[plan.source]
    info = staging.fs.get_file_info(f"{staging.root}/{DATA}")
    if info.type == pafs.FileType.NotFound:
        return {}
    dataset = ds.dataset(f"{staging.root}/{DATA}", format=output_format,
                         filesystem=staging.fs, exclude_invalid_files=True)
    cols = list(group) + ([position] if position else [])
    table = dataset.to_table(columns=cols)
    if table.num_rows == 0:
        return {}
    aggs = [(cols[-1] if position else group[0], "count")]
    if position:
        aggs += [(position, "min"), (position, "max")]
    out = {}
    for row in table.group_by(list(group)).aggregate(aggs).to_pylist():
        key = ":".join(str(row[g]) for g in group)
        out[key] = {"records": row[f"{aggs[0][0]}_count"]}
        if position:
            out[key].update(min=row[f"{position}_min"], max=row[f"{position}_max"])
    return out


def build_manifest(plan, figures, *, run_id=None, committed_at=None, extra=None):
    summaries = figures["summaries"]
    ts = [s for s in summaries if s.get("min_timestamp") is not None]
    manifest = {
        "pipeline": plan.pipeline, "source": plan.source, "mode": plan.mode,
        "partition": plan.partition, "plan_id": plan_id(plan), "run_id": run_id,
        "committed_at": committed_at, "records": figures["records"],
        "dead_letters": figures["dead_letters"],
        "late_records": sum(s.get("late", 0) for s in summaries),
        "min_timestamp": min((s["min_timestamp"] for s in ts), default=None),
        "max_timestamp": max((s["max_timestamp"] for s in ts), default=None),
        "interval": plan.interval.__dict__ if plan.interval else None,
        "batch": plan.batch, "gaps": plan.gaps, "splits": summaries,
        "plan": plan.to_dict(),
    }
    manifest.update(extra or {})
    return manifest


def read_manifest(dataset_uri, partition):
    fs, root = pafs.FileSystem.from_uri(dataset_uri.rstrip("/"))
    path = f"{root}/{partition}/{MANIFEST}"
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with fs.open_input_stream(path) as f:
        return json.loads(f.read())


def publish(plan, staging, dataset_uri, manifest):
    """Move the staged partition into place: the old partition (if any) is set aside, the new
    one renamed in, then the old one removed. Readers see the old or the new, never a mix; a
    crash in between leaves the partition absent until the retry re-publishes it.

    Object stores (S3) cannot rename a directory: there the old partition is removed and the
    new files copied in with ``_manifest.json`` last, so the manifest marks a complete
    partition; readers that do not check it can see a partition half copied."""
    fs, root = staging.fs, pafs.FileSystem.from_uri(dataset_uri.rstrip("/"))[1]
    if fs.type_name != "local":
        return _publish_by_copy(plan, staging, dataset_uri, manifest)
    data = f"{staging.root}/{DATA}"
    dead = f"{staging.root}/{DEAD_LETTER}"
    if fs.get_file_info(data).type == pafs.FileType.NotFound:
        fs.create_dir(data, recursive=True)  # an empty run still publishes its partition
    if fs.get_file_info(dead).type == pafs.FileType.Directory:
        fs.move(dead, f"{data}/{DEAD_LETTER}")
    with fs.open_output_stream(f"{data}/{MANIFEST}") as out:
        out.write(json.dumps(manifest, indent=1, sort_keys=True).encode())
    target = f"{root}/{plan.partition}"
    parent = target.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    trash = f"{root}/_trash/{plan.partition.replace('/', '_')}-{uuid.uuid4().hex[:8]}"
    if fs.get_file_info(target).type != pafs.FileType.NotFound:
        fs.create_dir(f"{root}/_trash", recursive=True)
        fs.move(target, trash)
    fs.move(data, target)
    if fs.get_file_info(trash).type != pafs.FileType.NotFound:
        fs.delete_dir(trash)
    fs.delete_dir(staging.root)
    return f"{dataset_uri.rstrip('/')}/{plan.partition}"


def _publish_by_copy(plan, staging, dataset_uri, manifest):
    fs, root = staging.fs, pafs.FileSystem.from_uri(dataset_uri.rstrip("/"))[1]
    target = f"{root}/{plan.partition}"
    if fs.get_file_info(target).type != pafs.FileType.NotFound:
        fs.delete_dir(target)
    for sub, dest in ((f"{staging.root}/{DATA}", target),
                      (f"{staging.root}/{DEAD_LETTER}", f"{target}/{DEAD_LETTER}")):
        selector = pafs.FileSelector(sub, recursive=True, allow_not_found=True)
        for info in fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                fs.copy_file(info.path, dest + info.path[len(sub):])
    with fs.open_output_stream(f"{target}/{MANIFEST}") as out:
        out.write(json.dumps(manifest, indent=1, sort_keys=True).encode())
    fs.delete_dir(staging.root)
    return f"{dataset_uri.rstrip('/')}/{plan.partition}"


def staging_for(dataset_uri, plan, attempt):
    return Staging(f"{dataset_uri.rstrip('/')}/_staging/{plan.partition}/{attempt}")


def _json(value):
    return value.to_dict() if hasattr(value, "to_dict") else value

