"""The CPU hog that `pytest --cpu-hog` runs beside the tests really burns CPU, and leaves no
process behind."""
import os
import time

from tests.support.cpu_hog import CpuHog


def test_the_hog_keeps_its_processes_busy_and_stops_them():
    with CpuHog(processes=2) as hog:
        pids = [p.pid for p in hog._procs]
        deadline = time.monotonic() + 30
        while hog.cpu_seconds() < 0.5:  # each spins whenever it gets a core
            assert time.monotonic() < deadline, "the hog did not burn half a CPU second in 30s"
            time.sleep(0.1)
        assert 0 < hog.busy_share() <= 1.05
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"hog process {pid} outlived the hog"


def test_one_process_per_core_by_default():
    assert CpuHog().processes == os.cpu_count()
