"""Waiting on conditions, never on fixed sleeps: CI may share its two cores, so a test waits
for what it needs (a consumer ACTIVE, a clock past a record's arrival), however long it takes
up to a generous timeout, and says what it waited for when it gives up."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 30.0,
             what: str | Callable[[], str] = "the condition", interval: float = 0.05) -> T:
    """Calls ``predicate`` until it returns something truthy and returns that; an
    AssertionError naming ``what`` once ``timeout`` seconds have passed without it. ``what``
    may be a function, called then, to say where things stood (the runs' states, a log)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g}s waiting for {said}")
        time.sleep(interval)


def wait_until_clock(epoch_s: float) -> None:
    """Until the wall clock reads ``epoch_s`` (seconds), for tests whose records' arrival or
    creation times must fall on one side of a boundary: there the clock is the condition."""
    while (left := epoch_s - time.time()) > 0:
        time.sleep(min(left, 0.05))
