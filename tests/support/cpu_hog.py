"""A CPU hog: one busy-looping process per core, so a test can be run as if the machine were
busy (CI runners and shared machines are). Tests must pass under it; a test that only passes
on an idle machine is waiting on time instead of on a condition.

Use it around any test with ``pytest --cpu-hog`` (or ``STREAMSLICE_CPU_HOG=1``), or directly::

    with CpuHog():
        ...

The busy processes inherit the caller's niceness, so a hog started under ``nice -n 10``
competes with the test as an equal without starving the rest of the machine."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType

_SPIN = "while True: pass"


def cpu_time_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuHog:
    """``processes`` busy loops (default: one per core) for the life of the ``with`` block."""

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or os.cpu_count() or 1
        self._procs: list[subprocess.Popen[bytes]] = []
        self._started = 0.0

    def start(self) -> CpuHog:
        self._started = time.monotonic()
        self._procs = [subprocess.Popen([sys.executable, "-c", _SPIN],
                                        stdin=subprocess.DEVNULL, start_new_session=True)
                       for _ in range(self.processes)]
        return self

    def cpu_seconds(self) -> float:
        """CPU time the hog's processes have burnt so far, all of them together."""
        total = 0.0
        for proc in self._procs:
            try:
                total += cpu_time_s(proc.pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        return total

    def busy_share(self) -> float:
        """The share of the machine's cores the hog has kept busy since it started."""
        wall = time.monotonic() - self._started
        return self.cpu_seconds() / (wall * (os.cpu_count() or 1)) if wall > 0 else 0.0

    def stop(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self._procs:
            proc.wait()
        self._procs = []

    def __enter__(self) -> CpuHog:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
