"""``streamslice``: validate, plan, offsets, backfill, freshness, demo, and each source's own
commands, found through the registry (``sources.HasCliCommands``: Kinesis adds ``efo``); a
source's commands get what they need from the CLI as a ``sources.CommandKit`` and never
import it.

The core commands (validate, plan) load only the core package unless the pipeline names an
Airflow connection; commands that touch Airflow's metadata database (offsets, backfill,
freshness) import
Airflow when they run. Tables for people, ``--json`` for scripts, one clear line (exit 1) for
every error (``errors.hints``), the traceback only with ``--debug``.

Run from a checkout where ``make demo`` has run, with AIRFLOW_HOME unset, the command uses the
demo's Airflow (``.demo/env``, which the demo writes) and says so."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..errors.hints import Where, debug_requested, explain
from ..timestamps import iso, parse_flexible_ms

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..commit.checkpoint import Checkpoint
    from ..config.pipeline import PipelineConfig
    from ..sources import CommandKit, Properties, Source

Args = argparse.Namespace
JSON_HELP = "print the result as JSON (for scripts) instead of a table"
PIPELINE_HELP = "a pipeline's name (its file's name without .yaml) or a pipeline file's path"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    where = Where(os.environ.get("AIRFLOW_HOME"))
    try:
        where = use_demo_env() or where
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI's last line: one sentence, never a traceback
        if debug_requested(args.debug):
            traceback.print_exc()
        print(f"streamslice: {explain(exc, where)}", file=sys.stderr)
        return 1


DEMO_ENV = Path(".demo") / "env"


def use_demo_env() -> Where | None:
    """In a checkout where ``make demo`` has run, with AIRFLOW_HOME unset: the demo's Airflow
    home and settings from ``.demo/env`` (``KEY=value`` lines; variables already set win)."""
    if os.environ.get("AIRFLOW_HOME") or not DEMO_ENV.is_file():
        return None
    for line in DEMO_ENV.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words and "=" in words[0]:
            key, _, value = words[0].partition("=")
            os.environ.setdefault(key, value)
    if not os.environ.get("AIRFLOW_HOME"):
        raise ConfigError(f"{DEMO_ENV} sets no AIRFLOW_HOME: run `make demo` again")
    print(f"streamslice: using the demo's Airflow (AIRFLOW_HOME={os.environ['AIRFLOW_HOME']}, "
          f"from {DEMO_ENV}; set AIRFLOW_HOME to use another)", file=sys.stderr)
    return Where(os.environ["AIRFLOW_HOME"], demo=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="streamslice", description="Bounded, exactly-once "
                                "slices of streams: validate, plan, offsets, backfill and "
                                "each source's own commands.")
    _common_options(p, None)
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check every pipeline file (and warn about staging "
                       "the executor's workers would not share)")
    v.add_argument("--json", action="store_true", help=JSON_HELP)
    v.set_defaults(run=cmd_validate)

    pl = sub.add_parser("plan", help="print a run's splits and lag without reading")
    pl.add_argument("pipeline", help=PIPELINE_HELP)
    pl.add_argument("--at", metavar="TIME", help="interval pipelines: a time inside the "
                    "interval to plan (ISO-8601, epoch s or ms; default: the last complete "
                    "interval)")
    pl.add_argument("--json", action="store_true", help=JSON_HELP)
    pl.set_defaults(run=cmd_plan)

    o = sub.add_parser("offsets", help="show or reset a pipeline's checkpoint")
    osub = o.add_subparsers(dest="action", required=True)
    show = osub.add_parser("show", help="print a pipeline's checkpoint: the next position of "
                           "every partition or shard")
    show.add_argument("pipeline", help=PIPELINE_HELP)
    show.add_argument("--json", action="store_true", help=JSON_HELP)
    show.set_defaults(run=cmd_offsets_show)
    reset = osub.add_parser("reset", help="move a pipeline's checkpoint: its next run reads "
                            "from there")
    reset.add_argument("pipeline", help=PIPELINE_HELP)
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", metavar="POSITION", help="earliest | latest (Kinesis also "
                        "TRIM_HORIZON | LATEST) | a timestamp (ISO-8601, epoch s/ms)")
    target.add_argument("--offsets", metavar="JSON", help='JSON {"topic:partition": '
                        'offset} (Kinesis: {"stream:shardId-…": "sequence number"})')
    reset.add_argument("--yes", action="store_true", help="do what the reset does beyond "
                       "the positions given without asking (Kinesis: shards --offsets does "
                       "not name go back to TRIM_HORIZON)")
    reset.add_argument("--json", action="store_true", help=JSON_HELP)
    reset.set_defaults(run=cmd_offsets_reset)

    from ..sources import SOURCES, HasCliCommands, source_class
    for kind in SOURCES:  # each source's own commands (Kinesis: efo)
        cls = source_class(kind)
        if isinstance(cls, HasCliCommands):
            cls.add_cli_commands(sub, command_kit())

    b = sub.add_parser("backfill", help="run an interval pipeline over a time range")
    b.add_argument("pipeline", help=PIPELINE_HELP)
    b.add_argument("--from", dest="start", metavar="TIME", required=True,
                   help="the range's start: ISO-8601 or epoch s/ms")
    b.add_argument("--to", dest="end", metavar="TIME", required=True,
                   help="the range's end, exclusive: ISO-8601 or epoch s/ms")
    b.add_argument("--no-wait", action="store_true", help="create the backfill and return "
                   "(without it the command waits for the runs, which needs a running "
                   "scheduler)")
    b.add_argument("--unpause", action="store_true", help="unpause the DAG if it is paused")
    b.add_argument("--reprocess", default="completed", choices=("completed", "failed", "none"),
                   help="intervals that already ran: completed re-runs them all (replacing "
                   "their partitions), failed only those that failed, none none of them")
    b.add_argument("--json", action="store_true", help=JSON_HELP)
    b.set_defaults(run=cmd_backfill)

    f = sub.add_parser("freshness", help="check every pipeline's freshness limit and send "
                       "its stale alert, outside Airflow's scheduler (exit 3 while one is stale)")
    f.add_argument("--json", action="store_true", help=JSON_HELP)
    f.set_defaults(run=cmd_freshness)

    i = sub.add_parser("init", help="write the DAG file and an example pipeline into a "
                       "DAGs folder")
    i.add_argument("folder", nargs="?", default=None, help="the DAGs folder (default: "
                   "$AIRFLOW__CORE__DAGS_FOLDER, else $AIRFLOW_HOME/dags)")
    i.add_argument("--json", action="store_true", help=JSON_HELP)
    i.set_defaults(run=cmd_init)

    k = sub.add_parser("package", help="write the package zip (--py-files) and the read "
                       "job's launcher for spark-submit into a folder")
    k.add_argument("folder", nargs="?", default=".", help="where to write them")
    k.add_argument("--json", action="store_true", help=JSON_HELP)
    k.set_defaults(run=cmd_package)

    d = sub.add_parser("demo", help="run the demo (in a repository checkout)")
    d.set_defaults(run=cmd_demo)
    for leaf in leaf_parsers(p):  # `streamslice validate --dir X` as well as `--dir X validate`
        if leaf is not p:
            _common_options(leaf, argparse.SUPPRESS)
    return p


def _common_options(p: argparse.ArgumentParser, default: Any) -> None:
    """--dir and --debug, before the command or after it: a subcommand's copy has no default
    of its own (SUPPRESS), so it never undoes one given before the command."""
    p.add_argument("--dir", default=default, help="pipeline files folder (default: "
                   "$STREAMSLICE_PIPELINES, ./dags/pipelines, or the pipelines folder of "
                   "Airflow's DAGs folder: $AIRFLOW__CORE__DAGS_FOLDER, else "
                   "$AIRFLOW_HOME/dags)")
    p.add_argument("--debug", action="store_true",
                   default=default if default is argparse.SUPPRESS else False,
                   help="print the traceback of an error (also STREAMSLICE_DEBUG=1)")


def leaf_parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``p`` and every parser under it, each command's own last (``offsets reset``)."""
    found = [p]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += leaf_parsers(child)
    return found


# -- helpers ----------------------------------------------------------------------------------

def command_kit() -> CommandKit:
    """What a source's own commands get from the CLI: output, the pipelines, connections
    (Airflow's, imported only when a command uses one)."""
    from ..sources import CommandKit
    return CommandKit(emit=emit, table=table, pipelines=_pipelines,
                      source_properties=_source_properties, aws_properties=_aws_properties)


def _pipelines(args: Args) -> list[PipelineConfig]:
    from ..config import load_pipelines
    return load_pipelines(pipelines_dir(args))[0]


def _source_properties(source: Source[Any]) -> Properties:
    from ..airflow.hooks import source_properties
    return source_properties(source)


def _aws_properties(conn_id: str, region: str | None, field: str) -> Properties:
    from ..airflow.hooks import aws_properties
    return aws_properties(conn_id, region, field=field)


def pipelines_dir(args: Args) -> Path:
    """--dir, else $STREAMSLICE_PIPELINES, else ``./dags/pipelines``, else the ``pipelines``
    folder of Airflow's DAGs folder, where ``streamslice init`` puts it."""
    from .scaffold import default_dags_folder
    given = args.dir or os.environ.get("STREAMSLICE_PIPELINES")
    if given:
        if not Path(given).is_dir():
            raise ConfigError(f"pipelines folder {given} does not exist (from "
                              f"{'--dir' if args.dir else 'STREAMSLICE_PIPELINES'})")
        return Path(given)
    looked = [Path("dags", "pipelines"), default_dags_folder() / "pipelines"]
    for candidate in looked:
        if candidate.is_dir():
            return candidate
    raise ConfigError(f"no pipelines folder found (looked in {looked[0]} and {looked[1]}): "
                      "run `streamslice init`, or pass --dir")


def find_pipeline(args: Args) -> PipelineConfig:
    from ..config import load_pipeline, load_pipelines
    if args.pipeline.endswith((".yaml", ".yml")) and Path(args.pipeline).exists():
        return load_pipeline(args.pipeline)
    configs, errors = load_pipelines(pipelines_dir(args))
    for cfg in configs:
        if cfg.name == args.pipeline:
            return cfg
    for err in errors:
        if err.file and Path(err.file).stem == args.pipeline:
            raise err
    names = ", ".join(sorted(c.name for c in configs)) or "none"
    raise ConfigError(f"no pipeline named {args.pipeline!r} (known: {names})")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[("-" if c is None else str(c)) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(out)


def emit(args: Args, data: Any, text: str) -> None:
    print(json.dumps(data, indent=1, sort_keys=True, default=str) if args.json else text)


def progress(done: int, total: int, label: str, width: int = 30) -> None:
    filled = int(width * done / total) if total else width
    end = "\n" if done >= total else ""
    print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end,
          flush=True, file=sys.stderr)


def logs_to_stderr() -> None:
    """Airflow's logging setup (on import) logs to stdout; a command's logs (the alerts it
    sends, the notifiers' own) go to stderr, so stdout stays the command's output."""
    import logging
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.setStream(sys.stderr)


# -- commands ---------------------------------------------------------------------------------

def cmd_validate(args: Args) -> int:
    """Every pipeline file: ok or its error; and a warning for each pipeline whose staging
    the configured executor's workers would not share (``config.executor``)."""
    from ..config import load_pipelines
    from ..config.executor import configured_executor, unshared_staging
    configs, errors = load_pipelines(pipelines_dir(args))
    executor = configured_executor()
    warnings = [w for w in (unshared_staging(c, executor) for c in configs) if w]
    data = {"valid": [c.name for c in configs], "errors": [str(e) for e in errors],
            "warnings": warnings}
    text = "\n".join([f"ok     {c.name}  ({c.file})" for c in configs] +
                     [f"warn   {w}" for w in warnings] + [f"error  {e}" for e in errors])
    emit(args, data, text or "no pipeline files")
    return 1 if errors else 0


def cmd_plan(args: Args) -> None:
    from ..config.schedule import interval_containing
    from ..planning.planner import plan_run
    from ..splits import lag_text
    cfg = find_pipeline(args)
    interval, checkpoint = None, None
    if cfg.mode == "interval":
        now = int(time.time() * 1000)
        at = parse_flexible_ms(args.at) if args.at else now
        interval = interval_containing(cfg, at)
        if not args.at:  # the last complete interval
            interval = interval_containing(cfg, interval.start - 1)
    elif args.at:
        raise ConfigError("--at applies to interval pipelines; incremental ones plan from "
                          "their checkpoint")
    else:
        checkpoint = _checkpoint_or_none(cfg)
    plan = plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                    interval=interval, checkpoint=checkpoint, properties=_properties(cfg))
    text_of = type(cfg.source).serializer().position_text
    rows = [[s.id, s.key, text_of(s.start).full, text_of(s.end).full, s.size,
             lag_text(s.lag, s.lag_unit) if s.lag is not None else None] for s in plan.splits]
    head = f"{cfg.name}: {len(plan.splits)} splits → {plan.partition}"
    if interval:
        head += f"  [{iso(interval.start)}, {iso(interval.end)})"
    text = head + "\n" + table(["split", "key", "start", "stop", "records", "lag"], rows)
    for gap in plan.gaps:
        text += f"\ndata loss (skipped): {gap}"
    emit(args, plan.to_dict(), text)


def _properties(cfg: PipelineConfig) -> Properties:
    """The run's client properties, resolved as the plan task resolves them
    (``airflow.hooks.pipeline_properties``); without Airflow when no connection is named."""
    if not names_connection(cfg):
        return cfg.source.client_properties()
    from ..airflow.hooks import pipeline_properties
    return pipeline_properties(cfg)


def names_connection(cfg: PipelineConfig) -> bool:
    """Whether the source or the schema registry names an Airflow connection."""
    registries = [spec.options.get("registry") for spec in (cfg.decode.value, cfg.decode.key)]
    return bool(cfg.source.conn_id) or any(
        isinstance(r, dict) and (r.get("conn_id") or r.get("aws_conn_id")) for r in registries)


def _checkpoint_or_none(cfg: PipelineConfig) -> Checkpoint | None:
    try:
        from ..airflow.checkpoint_store import show_checkpoint
        return show_checkpoint(cfg)
    except (ImportError, LookupError):
        return None


def cmd_offsets_show(args: Args) -> None:
    from ..airflow.checkpoint_store import show_checkpoint
    cfg = find_pipeline(args)
    cp = show_checkpoint(cfg)
    if cp is None:
        emit(args, None, f"{cfg.name}: no checkpoint yet (the first run starts from "
                         f"{cfg.source.describe_start()})")
        return
    rows = [[k, v] for k, v in sorted(cp.positions.items())]
    text = (f"{cfg.name}: batch {cp.batch}, run {cp.run_id}, committed "
            f"{iso(cp.committed_at) if cp.committed_at else '-'}\n"
            + table(["key", "next position"], rows))
    emit(args, cp.to_dict(), text)


def cmd_offsets_reset(args: Args) -> None:
    from ..airflow.checkpoint_store import reset_checkpoint
    cfg = find_pipeline(args)
    if args.offsets:
        try:
            to = {"offsets": json.loads(args.offsets)}
        except ValueError as exc:
            raise ConfigError(f"--offsets is not JSON: {exc}") from None
    elif args.to in ("earliest", "latest", "TRIM_HORIZON", "LATEST"):
        to = args.to
    else:
        try:
            to = {"timestamp": parse_flexible_ms(args.to)}
        except ValueError as exc:
            raise ConfigError(f"--to: {exc}") from None
    cp = reset_checkpoint(cfg, to, lambda what: _confirm(args, what))
    emit(args, cp.to_dict(), f"{cfg.name}: checkpoint reset ({cp.run_id})\n" +
         table(["key", "next position"], sorted(cp.positions.items())))


def _confirm(args: Args, what: str) -> bool:
    """--yes, or a yes at the terminal; said on stderr either way (stdout stays --json's)."""
    print(f"warning: {what}", file=sys.stderr)
    if args.yes:
        return True
    if not sys.stdin.isatty():
        return False
    answer = input("Reset anyway? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def cmd_backfill(args: Args) -> int:
    from ..airflow.backfill import backfill
    cfg = find_pipeline(args)
    try:
        start, end = parse_flexible_ms(args.start), parse_flexible_ms(args.end)
    except ValueError as exc:
        raise ConfigError(f"backfill range: {exc}") from None
    result = backfill(cfg, start, end, wait=not args.no_wait, unpause=args.unpause,
                      reprocess=args.reprocess, on_progress=None if args.json else progress,
                      say=lambda line: print(line, file=sys.stderr))
    emit(args, result, table(["interval", "state", "records"],
                             [[r["interval"], r["state"], r.get("records")]
                              for r in result["runs"]]))
    return 0 if result["state"] in ("success", "created") else 1


STALE_EXIT = 3  # 1: the check failed (one line on stderr), 2: a bad command line


def cmd_freshness(args: Args) -> int:
    """The freshness watchdog's check (``airflow.freshness.check``) from outside Airflow's
    scheduler, on the metadata database directly: the same verdicts, the same one ``stale``
    alert per stretch. Exit 0 when no pipeline is stale, 3 while one is (alerted now or
    before), else 1 when a pipeline file does not load."""
    from ..airflow.checkpoint_store import OfflineAssetStates
    from ..airflow.freshness import CommandClaims, check
    from ..config import load_pipelines
    configs, errors = load_pipelines(pipelines_dir(args))
    logs_to_stderr()
    verdicts = check(configs, {"asset_state_store": OfflineAssetStates()}, CommandClaims(),
                     who="command")
    for err in errors:
        print(f"streamslice: not checked: {err}", file=sys.stderr)
    rows = [[name, verdict] for name, verdict in sorted(verdicts.items())]
    text = table(["pipeline", "freshness"], rows) if rows else \
        f"no pipeline sets alerts.freshness ({len(configs)} pipelines)"
    emit(args, {"pipelines": verdicts, "errors": [str(e) for e in errors]}, text)
    if any(v in ("stale", "alerted") for v in verdicts.values()):
        return STALE_EXIT
    return 1 if errors else 0


def cmd_init(args: Args) -> int:
    from .scaffold import default_dags_folder, init
    folder = Path(args.folder) if args.folder else default_dags_folder()
    done = init(folder)
    data = {"written": [str(p) for p, w in done if w], "kept": [str(p) for p, w in done if not w],
            "pipelines": str(folder / "pipelines")}
    text = "\n".join(f"{'wrote' if w else 'kept '}  {p}" for p, w in done)
    emit(args, data, f"{text}\nnext: streamslice validate --dir {folder / 'pipelines'}")
    return 0


def cmd_package(args: Args) -> int:
    from ..spark.package import write_launcher, write_zip
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    zipped, job = write_zip(folder / "streamslice.zip"), write_launcher(folder / "bounded_read.py")
    emit(args, {"py_files": str(zipped), "job": str(job)},
         f"spark-submit --py-files {zipped} {job} --plan plan.json --staging URI")
    return 0


def cmd_demo(args: Args) -> int:
    root = Path(__file__).resolve().parents[2]
    if not (root / "devtools" / "demo.py").exists():
        raise ConfigError("the demo lives in the streamslice repository: run `make demo` there")
    import subprocess
    return subprocess.call([sys.executable, "-m", "devtools.demo"], cwd=root)


if __name__ == "__main__":
    sys.exit(main())
