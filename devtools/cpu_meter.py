"""CPU seconds by component while something runs, against what the whole machine used, so a
benchmark can say where the CPU went (``bench/backfill.py``: Airflow's components and the
task processes its executor starts, a Spark Connect server and its Python workers, the
broker, PostgreSQL) and how much of the machine's was someone else's.

A component is a root process and its descendants, by the process tree rather than by
command lines; a root may give its descendants a component of their own (the scheduler's
are the task processes). Other processes may be matched by command line (PostgreSQL's
backends, whose parent is the cluster's postmaster).

Short-lived processes count in full, however short: when a parent reaps a child the kernel
adds the child's CPU, and its own reaped descendants', to the parent's ``cutime``/``cstime``,
so a counted process's own CPU plus what it reaped is what it and all its ended descendants
used. Only a process that nobody counted reaps (a PostgreSQL backend; one orphaned by its
parent's end) counts at its last sample: up to one sampling period (``every``) of its CPU is
lost. Figures are in the kernel's clock ticks (10 ms). Linux only."""
from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

TICK = os.sysconf("SC_CLK_TCK")
Key = tuple[int, int]  # pid and start time: a pid the kernel reuses is another process
Stat = tuple[int, float, float]  # parent pid, own CPU s, CPU s of the children it reaped


@dataclass(frozen=True)
class Root:
    """A process whose own CPU is ``own``'s, its descendants' ``children``'s (``own``'s
    when empty)."""

    own: str
    children: str = ""


@dataclass(frozen=True)
class _Counted:
    own: str
    children: str
    parent: Key | None
    cpu: float = 0.0
    reaped: float = 0.0


@dataclass(frozen=True)
class Snapshot:
    """CPU seconds each component and the machine had used by ``at`` (monotonic s)."""

    at: float
    machine: float
    components: Mapping[str, float]


@dataclass(frozen=True)
class Usage:
    """CPU seconds by component over ``wall`` seconds, and the machine's busy CPU seconds
    (``/proc/stat``: user, nice, system, irq, softirq)."""

    wall: float
    machine: float
    components: Mapping[str, float]

    @property
    def counted(self) -> float:
        return sum(self.components.values())

    @property
    def rest(self) -> float:
        """The machine's CPU no component accounts for: other load, kernel threads."""
        return self.machine - self.counted


def machine_cpu() -> float:
    """Busy CPU seconds of all cores since boot."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = map(int, f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / TICK


def _stat(pid: str) -> tuple[Key, Stat] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:  # it ended meanwhile
        return None
    fields = text[text.rindex(b")") + 2:].split()  # fields[n - 3] is proc(5)'s field n
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (int(pid), int(fields[19])), (int(fields[1]), (utime + stime) / TICK,
                                         (cutime + cstime) / TICK)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class CpuMeter:
    """Samples every process every ``every`` seconds in a thread of its own; ``snapshot()``
    before and ``since()`` after a measured step give its ``Usage``."""

    def __init__(self, roots: Mapping[int, Root],
                 match: Callable[[str], str | None] = lambda cmdline: None,
                 every: float = 0.5) -> None:
        self.roots, self.match, self.every = dict(roots), match, every
        self._counted: dict[Key, _Counted] = {}
        self._ignored: set[Key] = set()
        self._ended: defaultdict[str, float] = defaultdict(float)  # of ended processes no
        # counted process reaped, at their last sample
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)

    def start(self) -> Self:
        self.snapshot()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self.every):
            with self._lock:
                self._sample()

    def snapshot(self) -> Snapshot:
        """A sample in which no counted process ended while it was taken (one that did could
        be counted twice, live and in its parent's reaped CPU, or not at all)."""
        with self._lock:
            for _ in range(50):
                at, machine = time.monotonic(), machine_cpu()
                if self._sample():
                    break
            return Snapshot(at, machine, self._totals())

    def since(self, before: Snapshot) -> Usage:
        after = self.snapshot()
        return Usage(after.at - before.at, after.machine - before.machine,
                     {name: after.components.get(name, 0.0) - before.components.get(name, 0.0)
                      for name in {*before.components, *after.components}})

    def _totals(self) -> dict[str, float]:
        totals = defaultdict(float, self._ended)
        for counted in self._counted.values():
            totals[counted.own] += counted.cpu
            totals[counted.children] += counted.reaped
        return dict(totals)

    def _sample(self) -> bool:
        """Reads every process once; False when a process ended while it was being read."""
        listed = [p for p in os.listdir("/proc") if p.isdigit()]
        stats = dict(s for s in map(_stat, listed) if s is not None)
        by_pid = {pid: key for pid, key in ((k[0], k) for k in stats)}
        counted: dict[Key, _Counted] = {}
        for key in sorted(stats, key=lambda k: (k[1], k[0])):  # a parent before its children
            ppid, cpu, reaped = stats[key]
            parent = by_pid.get(ppid)
            known = self._counted.get(key) or self._classify(key, parent, counted)
            if known is not None:
                counted[key] = replace(known, parent=parent, cpu=cpu, reaped=reaped)
        for key, gone in self._counted.items():
            if key not in counted and not self._reaped_by_counted(key, counted):
                self._ended[gone.own] += gone.cpu
                self._ended[gone.children] += gone.reaped
        self._counted = counted
        self._ignored &= stats.keys()
        steady = len(stats) == len(listed) and all(
            os.path.exists(f"/proc/{pid}") for pid, _ in counted)
        return steady

    def _reaped_by_counted(self, key: Key, now: Mapping[Key, _Counted]) -> bool:
        """Whether an ended process's CPU reached a live counted process's reaped CPU: its
        parent's, or (the parent ended too) the first live ancestor's it had at the last
        sample. (A process orphaned and reaped by init after that sample is then lost.)"""
        parent = self._counted[key].parent
        for _ in range(len(self._counted)):  # (bounded: a chain of parents has no loop)
            if parent is None or parent in now:
                break
            last = self._counted.get(parent)
            parent = last.parent if last is not None else None
        return parent in now

    def _classify(self, key: Key, parent: Key | None,
                  counted: Mapping[Key, _Counted]) -> _Counted | None:
        """A new process's components: a root's, its counted parent's children's, or by its
        command line; None (and not asked again) for one no component claims."""
        if key in self._ignored:
            return None
        root = self.roots.get(key[0])
        if root is not None:
            return _Counted(root.own, root.children or root.own, parent)
        if parent is not None and parent in counted:
            inherited = counted[parent].children
            return _Counted(inherited, inherited, parent)
        matched = self.match(_cmdline(key[0]))
        if matched is None:
            self._ignored.add(key)
            return None
        return _Counted(matched, matched, parent)
