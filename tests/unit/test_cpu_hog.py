"""The CPU hog that `pytest --cpu-hog` runs beside the tests really burns CPU, and leaves no
process behind."""
import os

from tests.support.cpu_hog import CpuHog
from tests.support.wait import wait_for


def test_the_hog_keeps_its_processes_busy_and_stops_them():
    with CpuHog(processes=2) as hog:
        pids = [p.pid for p in hog._procs]
        # each spins whenever it gets a core
        wait_for(lambda: hog.cpu_seconds() >= 0.5, 30, "the hog to burn half a CPU second",
                 interval=0.1)
        assert 0 < hog.busy_share() <= 1.05
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"hog process {pid} outlived the hog"


def test_one_process_per_core_by_default():
    assert CpuHog().processes == os.cpu_count()
