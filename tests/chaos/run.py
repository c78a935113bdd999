"""One pipeline run in its own process, driven the way the DAG drives it (the source's setup
tasks, plan → read → commit, its teardown), with the checkpoint in a JSON file instead of
Airflow's asset state and the read done by streamslice's split readers writing Parquet into
the staging area (a local folder or an object store such as S3) as the Spark job does.
The chaos tests start it in a new process group and let a fault SIGKILL the whole group.

  python -m tests.chaos.run PIPELINE.yaml STATE_DIR RUN_ID TRY [INTERVAL_START_MS]

TRY ``2:commit`` retries the commit alone on try 1's staging area, as Airflow retries a failed
commit task (its read task succeeded, so the read is not run again).
"""
import json
import os
import sys
import time

from tests.support.checks import present


def main(pipeline_file, state_dir, run_id, try_number, interval_start=None):
    from streamslice.config import load_pipeline
    from streamslice.sources import LifecycleRun, call, lifecycle_tasks
    cfg = load_pipeline(pipeline_file)
    # The source's lifecycle tasks (Kinesis EFO per_run: sweep and register before the run,
    # deregister after it), called as the DAG's setup and teardown tasks call them.
    tasks = {t.role: t for t in lifecycle_tasks(cfg.source)}
    life = LifecycleRun(run_id, cfg.source.client_properties)
    setup = {}
    for role in ("before_setup", "setup"):
        if role in tasks:
            setup[tasks[role].task_id] = call(tasks[role].callable)(cfg.source, life)
    options = cfg.source.read_options(setup) if setup else {}
    try:
        run(cfg, state_dir, run_id, try_number, interval_start, options)
    finally:  # like Airflow's teardown: also after a failed read (never after a SIGKILL)
        if "teardown" in tasks:
            call(tasks["teardown"].callable)(cfg.source, life)


def run(cfg, state_dir, run_id, try_number, interval_start, options):
    from streamslice.commit.checkpoint import Checkpoint, advance
    from streamslice.commit.protocol import publish_once, staging_for
    from streamslice.commit.publishers import staged_constants
    from streamslice.config.schedule import interval_containing
    from streamslice.errors import faults
    from streamslice.planning.planner import plan_run
    from streamslice.reading.decode import Decoder
    from streamslice.reading.sink import ParquetSink
    from streamslice.sources import ReadRequest, read_plan, source_class

    checkpoint_file = os.path.join(state_dir, "checkpoint.json")
    plan_file = os.path.join(state_dir, f"plan-{run_id}.json")

    def load_checkpoint():
        if not os.path.exists(checkpoint_file):
            return None
        with open(checkpoint_file) as f:
            return Checkpoint.from_dict(json.load(f))

    if os.path.exists(plan_file):  # a retry of the run reads what the first try planned
        with open(plan_file) as f:
            plan = read_plan(f.read())
    else:
        interval = interval_containing(cfg, int(interval_start)) if interval_start else None
        plan = plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                        output=cfg.output.target(cfg.name), interval=interval,
                        checkpoint=load_checkpoint(), run_id=run_id,
                        properties=cfg.source.client_properties())
        write_atomic(plan_file, plan.to_json())
        faults.check("plan")

    try_number, _, only = str(try_number).partition(":")
    staging = staging_for(plan, f"{run_id}-try{1 if only == 'commit' else try_number}")
    readers = source_class(plan.source).readers()
    request = ReadRequest(plan=plan, properties=cfg.source.client_properties(),
                          decoder=Decoder.from_dict(plan.decode), staging=staging,
                          fault=faults.current(), options=options)
    if only != "commit":
        staging.clear_data()
    for split in plan.splits if only != "commit" else ():  # as the Spark job's tasks do
        reader = readers.open_reader(split, request)
        reader.sink = ParquetSink(staging, split.id, readers.record_schema(request.decoder, plan),
                                  "snappy", constants=staged_constants(plan),
                                  keep_empty=split is plan.splits[0])
        assert list(reader.batches()) == []

    now = int(time.time() * 1000)
    manifest = publish_once(plan, staging, run_id=run_id, now_ms=now)
    faults.check("after_publish")
    current = load_checkpoint()
    summaries = {s.split: s for s in manifest.splits}
    positions = readers.next_positions(plan, summaries, current.positions if current else {})
    new = present(advance(current, plan, now_ms=now, run_id=run_id, positions=positions))
    write_atomic(checkpoint_file, json.dumps(new.to_dict()))
    faults.check("after_checkpoint")
    print(json.dumps({"partition": plan.partition, "records": manifest.records}))


def write_atomic(path, text):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


if __name__ == "__main__":
    from streamslice.errors import StreamsliceError
    try:
        main(*sys.argv[1:])
    except StreamsliceError as exc:
        print(exc.to_line(), file=sys.stderr)
        sys.exit(2)
