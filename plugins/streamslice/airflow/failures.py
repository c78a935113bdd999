"""How our errors meet Airflow: one clear line in the task log, a retry only where one can
help, and the original error kept on the Airflow exception for the failure alert.

Only this layer knows whether a transient error will be retried (the task's ``retries`` and
try), so the core's messages never promise a retry; a transient error's message here says
which task failed and whether Airflow tries it again."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import StreamsliceError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

log = logging.getLogger("streamslice")


@contextmanager
def operator_errors(context: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Transient errors (an unreachable source) are retried; the rest (bad config, data loss,
    failed verification) fail at once. ``context``: the task's, to say which task failed and
    whether it is retried."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException
    try:
        yield
    except StreamsliceError as exc:
        text = f"{exc}{retry_note((context or {}).get('ti')) if exc.transient else ''}"
        log.error("%s", text)
        cls = AirflowException if exc.transient else AirflowFailException
        raised = cls(f"{type(exc).__name__}: {text}")
        raised.streamslice_error = exc  # type: ignore[attr-defined]
        raise raised from None


def retry_note(ti: object) -> str:
    """`` (task read, try 1 of 3: Airflow retries it)``, or that it is not retried: as
    Airflow decides, a try is retried while ``try_number <= max_tries`` (``retries`` more
    than the first try, more once the task is cleared). ``ti``: the task instance (of the
    task's context), read for what it has."""
    try_number, max_tries = getattr(ti, "try_number", None), getattr(ti, "max_tries", None)
    if not isinstance(try_number, int) or not isinstance(max_tries, int):
        return ""
    tries = max(max_tries, try_number - 1) + 1
    task = f"task {getattr(ti, 'task_id', '?')}, try {try_number} of {tries}"
    if max_tries and try_number <= max_tries:
        return f" ({task}: Airflow retries it)"
    retries = getattr(getattr(ti, "task", None), "retries", None)
    why = f"retries: {retries}" if retries == 0 else "no retries left"
    return f" ({task}: not retried, {why})"


def original_error(exception: BaseException | None) -> StreamsliceError | None:
    """The streamslice error behind a task's exception, if it was one of ours."""
    if isinstance(exception, StreamsliceError):
        return exception
    found: StreamsliceError | None = getattr(exception, "streamslice_error", None)
    return found
