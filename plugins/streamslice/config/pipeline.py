"""Pipeline files: one YAML file per pipeline, validated into a typed model.

Every error names the file, the line, the field and what is allowed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from ..aws import AwsAuth, parse_auth
from ..commit.publishers import (
    PUBLISHERS,
    OutputSettings,
    parse_output_settings,
    publisher_class,
)
from ..errors import ConfigError
from ..formats import FORMATS, FormatSpec, Role, format_class, formats_for, prepare_format
from ..monitoring.alerts import AlertRules, parse_alerts
from ..planning.layout import check_template
from ..planning.plan import Interval, OutputTarget
from ..reading.event_time import UNITS, EventTime
from ..runners import Runner, parse_runner
from ..runners.local import LocalRunner
from ..sources import SOURCES, lifecycle_tasks, source_class
from ..timestamps import iso, parse_duration_ms, parse_timestamp_ms
from ..timestamps.javadate import compile_pattern
from . import yamlfile
from .extras import missing_message
from .fields import Fields
from .schedule import PRESETS, interval_starts, neighbours, schedule_delta_ms
from .task_args import LAYOUT_TASKS, TaskRouting, parse_task_routing

if TYPE_CHECKING:
    from ..sources import Properties, Source

MODES: tuple[Literal["interval", "incremental"], ...] = ("interval", "incremental")
MAX_FILE_BYTES = 1024 * 1024
# How a run's plan, read and commit map to Airflow tasks: one task each, or one task for all
TASK_LAYOUTS = ("separate", "combined")
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Decoding:
    """The ``format:`` block: the value's and the key's format (``streamslice.formats``)."""

    value: FormatSpec = FormatSpec()
    key: FormatSpec = FormatSpec()
    on_error: str = "dead_letter"  # or "fail"
    # A record's fields as top-level columns; False: in one struct column named as the
    # record part (``value``, Kinesis' ``data``, ``key``), as Spark's from_json(value) gives.
    flatten: bool = True
    # A run whose every record is a dead letter fails unless the pipeline expects such runs
    allow_all_dead_letters: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = {"value": self.value.to_dict(), "key": self.key.to_dict(),
               "on_error": self.on_error, "flatten": self.flatten}
        if self.allow_all_dead_letters:  # only then, so plans of other pipelines stay as they were
            out["allow_all_dead_letters"] = True
        return out

    def prepared(self, properties: Properties | None = None) -> Decoding:
        """As the plan records it: each format's ``prepare`` ran (on the driver, per run;
        ``properties``: the client properties, a schema registry's among them)."""
        return Decoding(prepare_format(self.value, properties),
                        prepare_format(self.key, properties), self.on_error, self.flatten,
                        self.allow_all_dead_letters)


@dataclass(frozen=True)
class Output:
    path: str  # absolute path or URL of the dataset root
    format: str = "parquet"  # a key of commit.publishers.PUBLISHERS
    compression: str = "snappy"
    aws: AwsAuth = AwsAuth()  # how every process reaches S3 / a Glue catalog (no secrets)
    # The keys of output: that its format's publisher takes (commit.publishers): a folder's
    # partition_path; a table's table, partition_by, an Iceberg catalog and conn_id
    settings: OutputSettings = OutputSettings()

    def dataset(self, pipeline: str) -> str:
        return _join(self.path, f"pipeline={pipeline}")

    def target(self, pipeline: str) -> OutputTarget:
        """Where and how a run of ``pipeline`` publishes (recorded in its plan)."""
        dataset = self.dataset(pipeline)
        return OutputTarget(dataset=dataset, format=self.format, compression=self.compression,
                            publisher=publisher_class(self.format).name,
                            aws=self.aws, **self.settings.target(dataset, pipeline))


@dataclass(frozen=True)
class PipelineConfig:
    name: str
    file: str
    mode: Literal["interval", "incremental"]
    source: Source[Any]
    output: Output
    decode: Decoding = Decoding()
    spark: Runner = LocalRunner()  # the spark: block: where the read job runs
    description: str = ""
    schedule: str | None = None
    start_date: int | None = None  # epoch ms
    end_date: int | None = None
    catchup: bool = False
    allowed_lateness: int = 0  # ms
    max_active_runs: int = 1
    retries: int = 2
    retry_delay: int = 30_000  # ms
    tasks: str = "separate"  # TASK_LAYOUTS; the default depends on the runner (_tasks)
    read_ahead: int = 0  # intervals of queued runs a combined task reads with its own
    tags: tuple[str, ...] = ()
    alerts: AlertRules | None = None
    event_time: EventTime | None = None  # interval mode: own records by a field's time
    allowed_earliness: int = 0  # ms a field's time may lie after the record's arrival
    # queue, pool, pool_slots, priority_weight, executor_config: per pipeline and per task
    routing: TaskRouting = TaskRouting()

    def task_ids(self) -> tuple[str, ...]:
        """The tasks of a run of this pipeline: its source's (EFO) and its layout's."""
        own = [t.task_id for t in lifecycle_tasks(self.source)]
        return (*own, *LAYOUT_TASKS[self.tasks])

    def interval(self, start: int, end: int) -> Interval:
        """The data interval ``[start, end)`` of a run, with this pipeline's bounds and its
        schedule's neighbouring intervals."""
        previous, following = neighbours(self.schedule, self.start_date, start, end) \
            if self.schedule else (None, None)
        return Interval(start, end, self.allowed_lateness,
                        self.event_time, self.allowed_earliness, previous, following)


def load_pipeline(path: str | os.PathLike[str]) -> PipelineConfig:
    """Parse and validate one pipeline file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"is larger than {MAX_FILE_BYTES // 1024} KiB; a pipeline file is a "
                          "few KiB", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                          f"{exc.start})", file=str(path), line=line) from None
    return parse_pipeline(text, file=str(path), default_name=path.stem)


def load_pipelines(folder: str | os.PathLike[str], only: str | None = None
                   ) -> tuple[list[PipelineConfig], list[ConfigError]]:
    """All ``*.yaml``/``*.yml`` files of a folder: (configs, errors) so one bad file does not
    hide the others. ``only``: just the files that decide what the name ``only`` stands for
    (``files_for``), with the same outcome for it as loading them all."""
    configs: list[PipelineConfig] = []
    errors: list[ConfigError] = []
    paths = sorted(Path(folder).glob("*.y*ml"))
    for path in paths if only is None else files_for(paths, only):
        try:
            configs.append(load_pipeline(path))
        except ConfigError as exc:
            errors.append(exc)
        except Exception as exc:  # noqa: BLE001 - a file must never take the other pipelines down
            errors.append(ConfigError(f"cannot be loaded: {type(exc).__name__}: {exc}",
                                      file=str(path)))
    names: dict[str, str] = {}
    for cfg in configs:
        if cfg.name in names:
            errors.append(ConfigError(f"pipeline name {cfg.name!r} is also used by "
                                      f"{names[cfg.name]}", file=cfg.file, field="pipeline"))
        names[cfg.name] = cfg.file
    return configs, errors


def files_for(paths: list[Path], name: str) -> list[Path]:
    """The files among ``paths`` that decide what ``name`` stands for: the pipelines named
    ``name`` (the last one wins, the others are errors), else the error of the file of that
    stem; and with that file, those sharing its name (a duplicate name is its error). Only
    each file's ``pipeline:`` key is read, not validated: a file whose name that cannot tell
    (set from the environment, not a string) is kept, and loading decides."""
    named = {path: _declared_name(path) for path in paths}
    wanted = {name} | {named[p] for p in paths if p.stem == name and named[p] is not None}
    return [p for p in paths if p.stem == name or named[p] is None or named[p] in wanted]


def _declared_name(path: Path) -> str | None:
    """The pipeline name ``path`` declares, its stem when it declares none (or cannot be read:
    then it is at most an error under its stem), None when that takes validating it."""
    try:
        with open(path, "rb") as f:
            data = yamlfile.load(f.read(MAX_FILE_BYTES + 1))
    except Exception:  # noqa: BLE001 - loading it says what is wrong; here it has no name
        return path.stem
    if not isinstance(data, dict) or "pipeline" not in data:
        return path.stem
    name = data["pipeline"]
    return name if isinstance(name, str) and "${" not in name else None


def parse_pipeline(text: str, file: str = "<string>", default_name: str = "pipeline",
                   project_root: str | None = None) -> PipelineConfig:
    f = Fields(_interpolate(_mapping(text, file), file), file=file)
    name = f.str("pipeline", default_name)
    if not NAME.fullmatch(name):
        raise f.error(f"{name!r} may hold only letters, digits, '_', '-' and '.'", "pipeline")
    mode = f.str("mode", choices=MODES)

    given = [k for k in SOURCES if f.has(k)]
    if len(given) != 1:
        raise f.error(f"needs exactly one source block: {' or '.join(SOURCES)}"
                      + (f" (got {', '.join(given)})" if given else ""))
    source = source_class(given[0]).parse(f.child(given[0]), mode, name)

    root = project_root or os.environ.get("STREAMSLICE_HOME") or _project_root(file)
    cfg = PipelineConfig(
        name=name, file=file, mode=mode, source=source,
        description=f.str("description", ""),
        schedule=_schedule(f, mode),
        start_date=f.parse("start_date", parse_timestamp_ms, None),
        end_date=f.parse("end_date", parse_timestamp_ms, None),
        catchup=f.bool("catchup", False),
        allowed_lateness=f.parse("allowed_lateness", parse_duration_ms, 0),
        max_active_runs=f.int("max_active_runs", 1 if mode == "incremental" else 4, minimum=1),
        retries=f.int("retries", 2, minimum=0),
        retry_delay=f.parse("retry_delay", parse_duration_ms, 30_000),
        tags=tuple(str(t) for t in f.list("tags", [])),
        decode=_decoding(f.child("format")),
        output=_output(f.child("output"), root),
        spark=parse_runner(f.child("spark")),
        alerts=parse_alerts(f.child("alerts")),
    )
    cfg = replace(cfg, tasks=_tasks(f, cfg.spark))
    cfg = replace(cfg, read_ahead=_read_ahead(f, cfg))
    cfg = replace(cfg, routing=parse_task_routing(f, cfg.task_ids(), cfg.tasks))
    if f.has("event_time"):
        et, early = _event_time(f.child("event_time"))
        cfg = replace(cfg, event_time=et, allowed_earliness=early)
    _check_together(f, cfg)
    f.done()
    _require_extras(cfg, f)
    return cfg


def _mapping(text: str, file: str) -> dict[str, object]:
    """The YAML's top-level mapping; a clear error where it is not YAML or not a mapping."""
    try:
        data = yamlfile.load(text)
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", file=file) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        reason = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"invalid YAML: {reason}", file=file,
                          line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise ConfigError("must be a YAML mapping of pipeline settings", file=file)
    return data


def _check_together(f: Fields, cfg: PipelineConfig) -> None:
    """The settings that are right or wrong only together: dates, mode and schedule."""
    if cfg.start_date is not None and cfg.end_date is not None \
            and cfg.end_date <= cfg.start_date:
        raise f.error("must be after start_date (otherwise no run would ever be scheduled)",
                      "end_date")
    if cfg.mode == "incremental" and cfg.max_active_runs != 1:
        raise f.error("must be 1 in mode incremental: runs continue from each other's "
                      "checkpoint", "max_active_runs")
    if cfg.mode == "interval":
        if not cfg.schedule:
            raise f.error("is required in mode interval (e.g. '@hourly' or '0 * * * *')",
                          "schedule")
        if cfg.start_date is None:
            raise f.error("is required in mode interval (the first interval's start)",
                          "start_date")
        width = shortest_interval(cfg.schedule, cfg.start_date)
        if cfg.allowed_lateness > width:
            raise f.error(f"{cfg.allowed_lateness // 1000}s is longer than the schedule's "
                          f"shortest interval ({width // 1000}s); lateness may be at most "
                          "one interval", "allowed_lateness")
        if cfg.allowed_earliness > width:
            raise f.child("event_time").error(
                f"{cfg.allowed_earliness // 1000}s is longer than the schedule's shortest "
                f"interval ({width // 1000}s); earliness may be at most one interval",
                "allowed_earliness")
        _check_partition_path(f, cfg)
    elif cfg.allowed_lateness:
        raise f.error("only applies to mode interval", "allowed_lateness")
    elif cfg.event_time:
        raise f.error("only applies to mode interval (an incremental run takes what "
                      "arrived since the last one)", "event_time")
    elif cfg.output.target(cfg.name).partition_path:
        raise f.child("output").error("only applies to mode interval (it is made of the "
                                      "interval's time; a batch is named batch=…)",
                                      "partition_path")


def _tasks(f: Fields, runner: Runner) -> str:
    """The runner's own layout by default (``Runner.tasks``); never combined where the read
    waits for its job in a trigger (``Runner.defers``), which needs a task of its own."""
    tasks = f.str("tasks", runner.tasks, choices=TASK_LAYOUTS)
    if tasks == "combined" and runner.defers:
        raise f.error(f"combined is not possible with spark.runner {runner.kind}: its read "
                      "waits for the job run in a trigger, as a task of its own; use "
                      "separate", "tasks")
    return tasks


READ_AHEAD = 16  # the default where a run can read ahead (``reading.ahead``)


def _read_ahead(f: Fields, cfg: PipelineConfig) -> int:
    """How many queued runs' intervals a run reads in its own job: only one task that plans,
    reads and commits can, in mode interval (whose runs are independent), on a runner whose
    job can read several plans (``Runner.reads_ahead``)."""
    why = ("needs tasks: combined" if cfg.tasks != "combined" else
           "needs mode: interval (an incremental run continues from the last one)"
           if cfg.mode != "interval" else
           f"is not possible with spark.runner {cfg.spark.kind}"
           if not cfg.spark.reads_ahead else None)
    value: int = f.int("read_ahead", 0 if why else READ_AHEAD, minimum=0, maximum=1000)
    if value and why:
        raise f.error(f"{why}; set 0 or leave it out", "read_ahead")
    return value


SPAN = 400  # the schedule's first intervals checked (a month's or a weekday cron's widths vary)


def shortest_interval(schedule: str, start_date: int) -> int:
    """The shortest of the schedule's first ``SPAN`` intervals, in ms."""
    starts = interval_starts(schedule, start_date, SPAN + 1)
    return min(b - a for a, b in zip(starts, starts[1:]))


def _check_partition_path(f: Fields, cfg: PipelineConfig) -> None:
    """Every interval its own folder: the template names the time finely enough for the
    schedule (checked on the schedule's first intervals, as Airflow will lay them out)."""
    template = cfg.output.target(cfg.name).partition_path
    if not template:
        return
    assert cfg.schedule is not None and cfg.start_date is not None
    starts = interval_starts(cfg.schedule, cfg.start_date, SPAN)
    shortest = min(b - a for a, b in zip(starts, starts[1:]))
    out = f.child("output")
    try:
        path = check_template(template, shortest)
    except ValueError as exc:
        raise out.error(str(exc), "partition_path") from None
    folders: dict[str, int] = {}
    for start in starts:
        folder = path.render(start)
        if folder in folders:
            raise out.error(f"{path.template!r} gives the intervals starting "
                            f"{iso(folders[folder])} and {iso(start)} the same folder "
                            f"{folder!r}", "partition_path")
        folders[folder] = start


def _require_extras(cfg: PipelineConfig, f: Fields) -> None:
    """Each part of the pipeline that needs a package extra (``streamslice.config.extras``) finds it
    installed, or validation names the extra to install (formats are checked as they are
    parsed, before their schemas are)."""
    fmt, out, spark = f.child("format"), f.child("output"), f.child("spark")
    needs = [(extra, f"the {cfg.source.kind} source", f, cfg.source.kind)
             for extra in cfg.source.extras()]
    for role, spec in (("value", cfg.decode.value), ("key", cfg.decode.key)):
        if spec.options.get("registry"):
            needs.append(("registry", f"{role}: {spec.name} with a schema registry", fmt, role))
    extra = publisher_class(cfg.output.format).extra
    if extra:
        needs.append((extra, f"output format {cfg.output.format}", out, "format"))
    if cfg.output.path.startswith(("s3://", "s3a://")):
        needs.append(("aws", "an output on S3", out, "path"))
    needs.append((cfg.spark.extra, f"spark.runner {cfg.spark.kind}", spark, "runner"))
    for extra, what, where, key in needs:
        message = missing_message(extra, what)
        if message:
            raise where.error(message, key)


def _interpolate(value: Any, file: str) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` in string values, from the environment."""
    if isinstance(value, dict):
        out = type(value)()
        for attr in ("line", "key_lines"):
            if hasattr(value, attr):
                setattr(out, attr, getattr(value, attr))
        for k, v in value.items():
            out[k] = _interpolate(v, file)
        return out
    if isinstance(value, list):
        return [_interpolate(v, file) for v in value]
    if isinstance(value, str) and "${" in value:
        def sub(m: re.Match[str]) -> str:
            got = os.environ.get(m.group(1))
            if got is None:
                if m.group(2) is None:
                    raise ConfigError(f"environment variable {m.group(1)} is not set "
                                      f"(write ${{{m.group(1)}:-default}} for a default)",
                                      file=file)
                return m.group(2)
            return got
        return _ENV.sub(sub, value)
    return value


def _schedule(f: Fields, mode: str) -> str | None:
    value = f.raw("schedule", None)
    if value is None:
        return None
    if not isinstance(value, str):
        raise f.error("must be a cron expression, a preset such as '@hourly', or a duration "
                      "such as '15m'", "schedule")
    delta = schedule_delta_ms(value)
    if delta:
        if delta % 1000:
            # Partitions are named to the second (interval=YYYYMMDDTHHMMSSZ): two intervals
            # in one second would publish to the same partition and the second replace the first.
            raise f.error(f"{value!r} is not a whole number of seconds; interval partitions "
                          "are named to the second", "schedule")
        return value.strip()
    cron = PRESETS.get(value.strip(), value.strip())
    if cron.startswith("@"):
        raise f.error(f"{value!r} is not one of the presets {', '.join(PRESETS)} "
                      "nor a cron expression", "schedule")
    from croniter import croniter
    if not croniter.is_valid(cron):
        raise f.error(f"{value!r} is not a valid cron expression", "schedule")
    return value.strip()


def _event_time(f: Fields) -> tuple[EventTime, int]:
    """``event_time: {field, unit, format, allowed_earliness}``."""
    field_path = f.str("field")
    if not re.fullmatch(r"[^.\s]+(\.[^.\s]+)*", field_path):
        raise f.error(f"{field_path!r} is not a field path such as event_time or meta.ts",
                      "field")
    et = EventTime(field=field_path, unit=f.str("unit", "ms", choices=tuple(UNITS)),
                   format=f.str("format", None))
    if et.format:
        try:
            compile_pattern(et.format)
        except ValueError as exc:
            raise f.error(f"{et.format!r} is not a Java date pattern: {exc}", "format") \
                from None
    early = f.parse("allowed_earliness", parse_duration_ms, 0)
    f.done()
    return et, early


def _decoding(f: Fields) -> Decoding:
    value, key = _format_name(f, "value"), _format_name(f, "key")
    for role, name in (("value", value), ("key", key)):
        for extra in format_class(name).extras:
            message = missing_message(extra, f"{role}: {name}")
            if message:
                raise f.error(message, role)
    dec = Decoding(value=format_class(value).parse(f, "value"),
                   key=format_class(key).parse(f, "key"),
                   on_error=f.str("on_error", "dead_letter", choices=("dead_letter", "fail")),
                   flatten=f.bool("flatten", True),
                   allow_all_dead_letters=f.bool("allow_all_dead_letters", False))
    f.done()
    return dec


def _format_name(f: Fields, role: Role) -> str:
    """The format ``role`` names. Only that format's module is imported (every pipeline file
    is parsed in every task process); the others only to list them when it is none of them."""
    name = f.raw(role, "raw")
    if isinstance(name, str) and name in FORMATS and role in format_class(name).roles:
        return name
    found: str = f.str(role, "raw", choices=formats_for(role))
    return found


def _output(f: Fields, root: str) -> Output:
    path = f.str("path", "output")
    if "://" not in path and not os.path.isabs(path):
        path = os.path.normpath(os.path.join(root, path))
    fmt = f.str("format", "parquet", choices=tuple(PUBLISHERS))
    compression = f.str("compression", "snappy")
    aws_f = f.child("aws")
    aws = parse_auth(aws_f)
    aws_f.done()
    settings = parse_output_settings(f, fmt, path)
    if aws.to_dict() and not (path.startswith(("s3://", "s3a://")) or settings.on_aws()):
        raise f.error("is for an output on S3 or in a Glue catalog (output.path is "
                      f"{path!r})", "aws")
    out = Output(path=path, format=fmt, compression=compression, aws=aws, settings=settings)
    f.done()
    return out


def _project_root(file: str) -> str:
    """What a relative ``output.path`` hangs off (without ``STREAMSLICE_HOME``): the folder
    above the DAGs folder, whatever that folder is called, for a file in its ``pipelines/``
    (``<root>/<dags>/pipelines/orders.yaml`` → ``<root>``), as ``streamslice init`` lays it
    out; the file's own folder for a file anywhere else."""
    p = Path(file).resolve()
    if p.parent.name == "pipelines":
        return str(p.parent.parent.parent)
    return str(p.parent)


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts])
