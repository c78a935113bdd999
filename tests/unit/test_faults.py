"""Fault injection from a file (``STREAMSLICE_INJECT_FAULT=@FILE``), as the chaos tests under
Airflow's scheduler use it: the first line is the fault, it fires once and only where it
matches, and the next line is next. (Raising faults only: the kill actions are exercised by
tests/chaos, which kill real processes.)"""
import pytest

from streamslice.errors import InjectedFault, faults


def test_each_line_of_a_fault_file_fires_once_in_order(tmp_path, monkeypatch):
    spec = tmp_path / "faults"
    spec.write_text("plan\nread:split=1:after=2\n")
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", f"@{spec}")
    faults.check("read", 1, 5)  # not the first line yet
    with pytest.raises(InjectedFault):
        faults.check("plan")
    faults.check("plan")  # fired already
    faults.check("read", 0, 5)  # another split
    faults.check("read", 1, 1)  # not far enough
    with pytest.raises(InjectedFault) as err:
        faults.check("read", 1, 2, spec=f"@{spec}")  # as a Spark reader gets it
    assert err.value.split == 1 and spec.read_text() == ""
    faults.check("read", 1, 9)
    spec.unlink()
    faults.check("plan")  # no file: no fault


def test_a_plain_spec_fires_every_time(monkeypatch):
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "before_publish")
    for _ in range(2):
        with pytest.raises(InjectedFault):
            faults.check("before_publish")
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    faults.check("before_publish")


def test_a_pause_waits_until_its_marker_is_removed(tmp_path, monkeypatch):
    """``action=pause``: the process writes ``FILE.paused`` and waits there until the test
    removes it, then goes on without raising (the test did what it paused for meanwhile)."""
    import os
    import threading

    from tests.support.wait import wait_for
    spec = tmp_path / "faults"
    spec.write_text("read:split=0:action=pause\n")
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", f"@{spec}")
    marker = tmp_path / "faults.paused"
    reader = threading.Thread(target=faults.check, args=("read", 0, 1))
    reader.start()
    wait_for(marker.exists, 30, "the reader to pause")
    assert marker.read_text().strip() == str(os.getpid()) and reader.is_alive()
    marker.unlink()
    reader.join(30)
    assert not reader.is_alive() and spec.read_text() == ""
