"""How our errors meet Airflow: one clear line in the task log, a retry only where one can
help, and the original error kept on the Airflow exception for the failure alert."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import StreamsliceError

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger("streamslice")


@contextmanager
def operator_errors() -> Iterator[None]:
    """Transient errors (an unreachable source) are retried; the rest (bad config, data loss,
    failed verification) fail at once."""
    from airflow.sdk.exceptions import AirflowException, AirflowFailException
    try:
        yield
    except StreamsliceError as exc:
        log.error("%s", exc)
        cls = AirflowException if exc.transient else AirflowFailException
        raised = cls(f"{type(exc).__name__}: {exc}")
        raised.streamslice_error = exc  # type: ignore[attr-defined]
        raise raised from None


def original_error(exception: BaseException | None) -> StreamsliceError | None:
    """The streamslice error behind a task's exception, if it was one of ours."""
    if isinstance(exception, StreamsliceError):
        return exception
    found: StreamsliceError | None = getattr(exception, "streamslice_error", None)
    return found
