"""Operator alerts: what is worth waking someone for, decided by pure rules over a run's
manifest and the pipeline's recent history. Delivery (SNS, log, any Airflow notifier) is the
Airflow glue's business."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..records import RecordKind, Versioned
from ..splits import total_lag
from ..timestamps import iso, parse_duration_ms

if TYPE_CHECKING:
    from ..commit.checkpoint import Checkpoint
    from ..commit.manifest import Manifest
    from ..config.fields import Fields
    from ..reading.stats import SplitSummary

KINDS = ("run_failed", "data_loss", "lag", "dead_letters", "empty_intervals", "deadline",
         "stale")


@dataclass
class Alert(Versioned):
    """One alert as notifiers publish it (its JSON: ``to_json``)."""

    KIND: ClassVar[RecordKind] = RecordKind("alert", 1)

    kind: str
    pipeline: str
    message: str
    run_id: str | None = None
    interval: dict[str, Any] | None = None  # {"start": ISO, "end": ISO}
    link: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    version: int = 1

    @property
    def subject(self) -> str:
        return f"[streamslice] {self.pipeline}: {self.kind.replace('_', ' ')}"[:100]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, default=str)


@dataclass
class SentAlert(Versioned):
    """An alert as the pipeline's asset state keeps it (``alerting.record``), one key each:
    what the Streamslice page counts, lists and explains failed runs by."""

    KIND: ClassVar[RecordKind] = RecordKind("sent alert", 1)

    at: int  # epoch ms it was sent
    kind: str
    message: str
    run_id: str | None = None
    task: str | None = None  # the failed task (run_failed, data_loss)
    error_kind: str | None = None  # its error's ``StreamsliceError.kind``
    version: int = 1

    @classmethod
    def of(cls, alert: Alert, at: int) -> SentAlert:
        return cls(at=at, kind=alert.kind, message=alert.message, run_id=alert.run_id,
                   task=alert.details.get("task"), error_kind=alert.details.get("error_kind"))


@dataclass(frozen=True)
class AlertRules:
    # ({"type": "sns", …}, {"class": "pkg.mod.Notifier", "args": {…}})
    notifiers: tuple[dict[str, Any], ...] = ()
    lag_records: int | None = None  # Kafka: records behind the high watermark at plan time
    lag_millis: int | None = None  # Kinesis: MillisBehindLatest
    dead_letters: int | None = None  # a run with at least this many dead letters
    empty_intervals: int | None = None  # this many consecutive empty runs
    deadline: int | None = None  # ms a run may take
    freshness: int | None = None  # ms the newest complete data may be old


def parse_alerts(f: Fields) -> AlertRules:
    """The ``alerts:`` block (``f`` is a Fields)."""
    notifiers: list[dict[str, Any]] = []
    for i, item in enumerate(f.raw("notifiers", []) or []):
        shape_ok = isinstance(item, dict) and (
            len(item) == 1 or (set(item) == {"class", "args"}))
        if not shape_ok:
            raise f.error(f"entry {i + 1} must be one of {{sns: …}}, {{log: {{}}}} or "
                          "{class: pkg.Notifier, args: …}", "notifiers")
        kind = "class" if "class" in item else next(iter(item))
        spec = item[kind]
        spec = spec or {}
        if kind == "sns":
            if not isinstance(spec, dict) or not spec.get("topic_arn"):
                raise f.error(f"entry {i + 1}: sns needs topic_arn", "notifiers")
            unknown = set(spec) - {"topic_arn", "aws_conn_id", "region"}
            if unknown:
                raise f.error(f"entry {i + 1}: sns does not take {sorted(unknown)[0]!r}",
                              "notifiers")
            notifiers.append({"type": "sns", **spec})
        elif kind == "log":
            notifiers.append({"type": "log"})
        elif kind == "class":
            if not isinstance(spec, str) or "." not in spec:
                raise f.error(f"entry {i + 1}: class must be a dotted path to an Airflow "
                              "notifier", "notifiers")
            args = item.get("args") or {}
            if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
                raise f.error(f"entry {i + 1}: args must map the notifier's keyword "
                              "arguments to values", "notifiers")
            notifiers.append({"type": "class", "class": spec, "args": dict(args)})
        else:
            raise f.error(f"entry {i + 1}: {kind!r} is not sns, log or class", "notifiers")
    rules = AlertRules(
        notifiers=tuple(notifiers),
        lag_records=f.int("lag_records", None, minimum=0),
        lag_millis=f.parse("lag_millis", parse_duration_ms, None),
        dead_letters=f.int("dead_letters", None, minimum=1),
        empty_intervals=f.int("empty_intervals", None, minimum=1),
        deadline=f.parse("deadline", parse_duration_ms, None),
        freshness=f.parse("freshness", parse_duration_ms, None))
    f.done()
    return rules


def evaluate(rules: AlertRules, manifest: Manifest,
             empty_streak: int = 0) -> list[tuple[str, str, dict[str, Any]]]:
    """``[(kind, message, details)]`` for one committed run."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    splits = manifest.splits
    lag = total_lag(splits)
    if rules.lag_records is not None and lag["records"] is not None \
            and lag["records"] > rules.lag_records:
        worst = max(splits, key=lambda s: _lag(s, "records"))
        out.append(("lag", f"{lag['records']} records behind the high watermark at plan time "
                    f"(threshold {rules.lag_records}); most on {worst.key} "
                    f"({_lag(worst, 'records')})",
                    {"lag_records": lag["records"], "worst_split": worst.key}))
    if rules.lag_millis is not None and lag["ms"] is not None and lag["ms"] > rules.lag_millis:
        out.append(("lag", f"MillisBehindLatest {lag['ms']} ms (threshold "
                    f"{rules.lag_millis} ms)", {"millis_behind_latest": lag["ms"]}))
    if rules.dead_letters is not None and manifest.dead_letters >= rules.dead_letters:
        out.append(("dead_letters", f"{manifest.dead_letters} records failed to decode and "
                    f"went to the dead letters of {manifest.partition} (threshold "
                    f"{rules.dead_letters})", {"dead_letters": manifest.dead_letters}))
    if rules.empty_intervals is not None and empty_streak >= rules.empty_intervals:
        out.append(("empty_intervals", f"{empty_streak} consecutive runs read no records",
                    {"empty_runs": empty_streak}))
    if manifest.gaps:
        out.append(("data_loss", "records were lost and skipped (on_data_loss: skip): " +
                    "; ".join(_gap(g) for g in manifest.gaps), {"gaps": manifest.gaps}))
    return out


def _lag(summary: SplitSummary, unit: str) -> int:
    return (summary.lag or 0) if summary.lag_unit == unit else 0


def _gap(gap: dict[str, Any]) -> str:
    return f"{gap['key']} from {gap['from']} to {gap['to']} ({gap['reason']})"


def complete_to(checkpoint: Checkpoint | None) -> int | None:
    """Up to when the pipeline's published data is complete (epoch ms), from its checkpoint:
    the end of the newest interval committed (interval mode), else when the latest batch
    committed (it read up to the tip as planned just before). None before the first commit."""
    if checkpoint is None:
        return None
    return checkpoint.interval_end or checkpoint.committed_at


def stale(limit_ms: int | None, newest_ms: int | None, now_ms: int) -> str | None:
    """The ``stale`` alert's message when the newest complete data is older than the
    pipeline's ``alerts.freshness`` (``newest_ms``: ``complete_to``; None: nothing was ever
    published, which no limit can be measured from), else None."""
    if limit_ms is None or newest_ms is None or now_ms - newest_ms <= limit_ms:
        return None
    return (f"the newest complete data is {duration_text(now_ms - newest_ms)} old (complete to "
            f"{iso(newest_ms)}; freshness limit {duration_text(limit_ms)}): no run has "
            "published since. Is the DAG paused, failing, or its scheduler stopped?")


def duration_text(ms: int) -> str:
    """``2 h 5 min``, ``3 d 4 h``, ``45 s``: an age as people read it."""
    seconds = ms // 1000
    for unit, size, smaller, small_size in (("d", 86_400, "h", 3600), ("h", 3600, "min", 60),
                                            ("min", 60, "s", 1)):
        if seconds >= size:
            big, rest = divmod(seconds, size)
            rest //= small_size
            return f"{big} {unit} {rest} {smaller}" if rest else f"{big} {unit}"
    return f"{seconds} s"
