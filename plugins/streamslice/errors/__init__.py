"""Errors a user can act on. Each one says what went wrong and where, never a bare traceback.

Every class has a ``kind`` code. An error that crosses a process boundary (a Spark executor, a
spark-submit job) travels as one line, ``streamslice[<kind>@<split>]: message`` (``to_line``),
and is rebuilt as the same type on the other side (``from_text``), so nothing downstream has to
guess an error's kind from its wording.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence


class StreamsliceError(Exception):
    """Base class: the message is meant for the operator."""

    kind = "error"
    transient = False  # worth an Airflow retry
    # What the operator does about it, one sentence (the Streamslice page shows it).
    advice = "Open the failed task's log for the cause, fix it, then re-run."

    def __init__(self, message: str = "", *, split: int | None = None) -> None:
        super().__init__(message)
        self.split = split

    def to_line(self) -> str:
        where = f"@{self.split}" if self.split is not None else ""
        text = " ".join(str(self).split("\n"))
        return f"streamslice[{self.kind}{where}]: {text}"


class ConfigError(StreamsliceError):
    """A pipeline file (or data source option) is invalid."""

    kind = "config"
    advice = ("Fix the pipeline file (streamslice validate names the line and field), "
              "then re-run.")

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file, self.line, self.field, self.reason = file, line, field, message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}{message}")


class SourceError(StreamsliceError):
    """The source (broker, stream) cannot be reached or does not have what the plan needs."""

    kind = "source"
    transient = True
    advice = ("Check that the source can be reached with the pipeline's connection (brokers "
              "or stream, credentials, network), then re-run.")


class DataLossError(StreamsliceError):
    """Records the plan needs have expired or were trimmed before they could be read."""

    kind = "data_loss"
    advice = ("The records expired from the source before they were read, so a re-run "
              "fails the same way: accept the gap by resetting the checkpoint past it "
              "(streamslice offsets reset), or restore the data.")

    def __init__(self, message: str, gaps: Sequence[Any] = (), *,
                 split: int | None = None) -> None:
        super().__init__(message, split=split)
        self.gaps = list(gaps)


class PlanError(StreamsliceError):
    """A plan cannot be built or does not match what was read."""

    kind = "plan"
    advice = "Open the plan task's log; a re-run reads the same saved plan."


class PlanVersionError(PlanError):
    """A saved plan is from a release this one cannot read: newer, or too old to migrate."""

    kind = "plan_version"


class RecordError(StreamsliceError):
    """A saved record (checkpoint, manifest, split summary, run metrics, alert) is not one
    streamslice wrote, or not of a shape this release reads (``streamslice.records``)."""

    kind = "record"


class RecordVersionError(RecordError):
    """A saved record is from a release this one cannot read: newer, or too old to migrate."""

    kind = "record_version"
    advice = ("A newer streamslice wrote this record: run this task (or command) where that "
              "release is installed, or upgrade streamslice here.")


class CommitError(StreamsliceError):
    """The staged output failed verification or could not be published."""

    kind = "commit"
    advice = ("Nothing was published; open the commit log, then re-run: it reads the same "
              "plan again and replaces the partition.")


class StalePlanError(CommitError):
    """A saved incremental plan no longer holds: the checkpoint it was planned from has moved
    (another run committed since), so reading or publishing it would replace newer data."""

    kind = "stale_plan"
    advice = ("Another run committed since this run planned: clear the whole run (its plan "
              "task too) to plan again from the current checkpoint.")


class DecodeError(StreamsliceError):
    """A record could not be decoded and the pipeline is set to fail on decode errors."""

    kind = "decode"
    advice = ("A record did not decode and format.on_error is fail: fix format.schema or "
              "set on_error: dead_letter, then re-run.")


class AllDeadLettersError(DecodeError):
    """A run read records and not one of them decoded: far more often a format that does not
    match the topic (schema, Protobuf message, registry subject) than bad data, so it is not
    published as a success."""

    kind = "all_dead_letters"
    advice = ("Every record of the run was a dead letter (the first reasons are in the "
              "message): fix the format (schema, message, subject), or set "
              "format.allow_all_dead_letters: true if such runs are expected, then re-run.")


class InjectedFault(StreamsliceError):
    """A crash made on purpose by a test (``STREAMSLICE_INJECT_FAULT``)."""

    kind = "injected_fault"
    transient = True
    advice = "A test made this fault on purpose (STREAMSLICE_INJECT_FAULT); re-run."


KINDS: dict[str, type[StreamsliceError]] = {
    cls.kind: cls for cls in (StreamsliceError, ConfigError, SourceError, DataLossError,
                              PlanError, PlanVersionError, RecordError, RecordVersionError,
                              CommitError, StalePlanError, DecodeError,
                              AllDeadLettersError, InjectedFault)}
_LINE = re.compile(r"streamslice\[(\w+)(?:@(\d+))?\]: (.*?)(?:\\n|\n|$)")


def advice(kind: str | None) -> str:
    """What to do about an error of ``kind`` (any other error: read its log)."""
    return KINDS.get(kind or "", StreamsliceError).advice


def from_kind(kind: str, message: str, split: int | None = None) -> StreamsliceError:
    cls = KINDS.get(kind, StreamsliceError)
    if cls is ConfigError:
        err: StreamsliceError = ConfigError(message)
        err.split = split
        return err
    return cls(message, split=split)


def from_text(text: str) -> StreamsliceError | None:
    """The last ``streamslice[...]`` line in ``text`` (a Spark or job error), rebuilt."""
    found = _LINE.findall(text)
    if not found:
        return None
    kind, split, message = found[-1]
    return from_kind(kind, message.strip(), int(split) if split else None)
