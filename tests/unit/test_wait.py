"""tests/support/wait.py: a wait returns as soon as its condition holds and, when it gives up,
says what it waited for (computed then, when ``what`` is a function)."""
import time

import pytest

from tests.support.wait import wait_for, wait_until_clock


def test_wait_for_returns_the_first_truthy_value():
    answers: list[object] = [None, 0, [], "ready"]  # falsy values of all kinds, then a truthy one
    calls = iter(answers)
    assert wait_for(lambda: next(calls), timeout=5, interval=0) == "ready"


def test_wait_for_names_what_it_waited_for_when_it_gives_up():
    with pytest.raises(AssertionError, match=r"^timed out after 0.1s waiting for the thing$"):
        wait_for(lambda: False, timeout=0.1, what="the thing")
    seen = []
    with pytest.raises(AssertionError) as err:
        wait_for(lambda: seen.append(1), timeout=0.1, what=lambda: f"{len(seen)} polls",
                 interval=0.01)
    assert str(err.value).endswith(f"waiting for {len(seen)} polls") and len(seen) > 1


def test_wait_until_clock_returns_once_the_clock_reads_the_time():
    target = time.time() + 0.2
    wait_until_clock(target)
    assert time.time() >= target
