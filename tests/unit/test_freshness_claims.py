"""One stale alert per stale stretch when the freshness watchdog (in an Airflow task) and
``streamslice freshness`` (outside the scheduler) check at once (``airflow.freshness``): each
interleaving of the two, over a stand-in for the output asset's state (a dict, with the
atomic claim the command makes on the metadata database; that claim itself is tested on a
real database in tests/integration/test_freshness_cli.py), counting what is sent."""
import time

import pytest

from streamslice.airflow import freshness
from streamslice.airflow.freshness import LEASE, CommandClaims, check
from streamslice.config import parse_pipeline

KAFKA = ("mode: interval\nschedule: '@hourly'\nstart_date: '2024-05-01T00:00:00Z'\n"
         "kafka: {bootstrap_servers: 'a:1', topics: [t]}\noutput: {path: /lake}\n"
         "alerts: {freshness: 2h}\n")
NEWEST = 1_714_521_600_000  # complete to 2024-05-01 00:00: long past 2 h
KEY = f"stale_alert/{NEWEST}"


class State:
    """One asset's state: get/set as a task's store, ``claim`` as the database's."""

    def __init__(self):
        self.values = {"checkpoint": {"positions": {}, "interval_end": NEWEST}}

    def get(self, key):
        return self.values.get(key)

    def set(self, key, value):
        self.values[key] = value

    def claim(self, key, value, free):
        if key in self.values and not free(self.values[key]):
            return False
        self.values[key] = value
        return True


@pytest.fixture
def orders():
    return parse_pipeline(KAFKA, file="orders.yaml", default_name="orders")


@pytest.fixture
def sent(monkeypatch):
    out = []
    monkeypatch.setattr(freshness, "send", lambda cfg, alert, context: out.append(alert))
    return out


def run(cfg, state, claims=None, who="watchdog"):
    return check([cfg], {"asset_state_store": States(state=state)}, claims, who)[cfg.name]


def nothing_running():
    return False


class States:
    """``asset_state_store[asset]`` for the one asset these tests use."""

    def __init__(self, state):
        self.state = state

    def __getitem__(self, asset):
        return self.state


def test_the_watchdog_then_the_command_send_once(orders, sent):
    state = State()
    assert run(orders, state) == "stale"
    assert run(orders, state, CommandClaims(running=nothing_running), "command") == "alerted"
    assert run(orders, state) == "alerted"
    assert len(sent) == 1 and sent[0].details["complete_to"] == "2024-05-01T00:00:00.000Z"
    assert state.get(KEY)["by"] == "watchdog" and state.get(KEY)["sent"] is True


def test_the_command_alone_sends_once_and_marks_it_sent(orders, sent):
    state = State()
    assert run(orders, state, CommandClaims(running=nothing_running), "command") == "stale"
    assert run(orders, state) == "alerted"
    assert len(sent) == 1 and state.get(KEY)["by"] == "command"


def test_a_watchdog_that_read_before_the_commands_claim_keeps_the_stretch(orders, sent):
    """The watchdog read no claim, then the command claimed, then the watchdog wrote its own
    claim and sent while the command waited for its task to end: the command must not send."""
    state = State()
    assert state.get(KEY) is None  # what the watchdog read: nothing claimed yet
    polls = []

    def watchdog_task_running():
        polls.append(1)
        if len(polls) == 1:  # the watchdog writes its claim and sends, still running
            state.set(KEY, {"by": "watchdog", "id": "w", "at": 1, "sent": False})
            sent.append("the watchdog's alert")
            state.set(KEY, {"by": "watchdog", "id": "w", "at": 1, "sent": True})
            return True
        return False
    assert run(orders, state, CommandClaims(running=watchdog_task_running, poll=0),
               "command") == "alerted"
    assert sent == ["the watchdog's alert"] and len(polls) == 2


def test_a_watchdog_that_reads_after_the_commands_claim_leaves_it_to_the_command(
        orders, sent):
    state = State()

    checked: list[bool] = []

    def watchdog_task_running():  # the watchdog runs its check now: it sees the claim
        running = not checked
        if running:
            checked.append(True)
            assert run(orders, state) == "alerted"
        return running
    assert run(orders, state, CommandClaims(running=watchdog_task_running, poll=0),
               "command") == "stale"
    assert len(sent) == 1 and state.get(KEY)["by"] == "command"


def test_a_claim_left_unsent_is_taken_over_after_the_lease_not_before(orders, sent):
    state = State()
    now = int(time.time() * 1000)
    state.set(KEY, {"by": "command", "id": "dead", "at": now, "sent": False})
    assert run(orders, state) == "alerted" and sent == []  # it may still be sending
    left = now - int(LEASE.total_seconds() * 1000) - 60_000
    for claims, who in ((None, "watchdog"), (CommandClaims(running=nothing_running),
                                             "command")):
        state.set(KEY, {"by": "watchdog", "id": "dead", "at": left, "sent": False})
        sent.clear()
        assert run(orders, state, claims, who) == "stale" and len(sent) == 1
        assert state.get(KEY)["by"] == who


def test_a_watchdog_task_that_runs_on_keeps_the_stretch(orders, sent):
    """The command waits ``wait`` seconds for a running watchdog task, then leaves the
    stretch to it without sending (its claim stays unsent: a later check takes it over)."""
    state = State()
    claims = CommandClaims(wait=0, poll=0, running=lambda: True)
    assert run(orders, state, claims, "command") == "alerted" and sent == []
    assert state.get(KEY)["sent"] is False
