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
used. A process whose CPU reaches no counted process that way counts at its last sample, so
up to one sampling period (``every``) of its CPU is lost: a PostgreSQL backend (the cluster's
postmaster reaps it), an orphan (init does), and the children of a parent that ignores
SIGCHLD (the kernel reaps them, and adds their CPU to nobody's: pyspark's daemon does this
with its workers; one that starts and ends between two samples is not seen at all). Figures
are in the kernel's clock ticks (10 ms). Linux only."""
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


def _stat(pid: int) -> tuple[Key, Stat] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:  # it ended meanwhile
        return None
    fields = text[text.rindex(b")") + 2:].split()  # fields[n - 3] is proc(5)'s field n
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    own, reaped = (utime + stime) / TICK, (cutime + cstime) / TICK
    return (pid, int(fields[19])), (int(fields[1]), own, reaped)


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
        # the CPU of ended processes that reached no counted process's reaped CPU
        self._ended: defaultdict[str, float] = defaultdict(float)
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
        """The components' CPU so far, from a sample in which no counted process ended while
        it was taken (tried again until one is)."""
        with self._lock:
            for attempt in range(50):
                at, machine = time.monotonic(), machine_cpu()
                if self._sample(unsteady=attempt == 49):
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

    def _sample(self, unsteady: bool = False) -> bool:
        """Reads every process once and takes the reading, unless a counted process ended
        while it was being read (``unsteady`` takes it anyway): then it could be counted
        twice, live and in its parent's reaped CPU, or not at all. Whether it was taken."""
        listed = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        stats = dict(s for s in map(_stat, listed) if s is not None)
        by_pid = {key[0]: key for key in stats}
        counted: dict[Key, _Counted] = {}
        ignored: set[Key] = set()
        for key in sorted(stats, key=lambda k: (k[1], k[0])):  # a parent before its children
            ppid, cpu, reaped = stats[key]
            parent = by_pid.get(ppid)
            known = self._counted.get(key)
            if known is None and key not in self._ignored:
                known = self._classify(key, parent, counted)
                if known is None:
                    ignored.add(key)
            if known is not None:
                counted[key] = replace(known, parent=parent, cpu=cpu, reaped=reaped)
        unread = set(listed) - by_pid.keys()
        if not unsteady and (any(pid in unread for pid, _ in self._counted) or not all(
                os.path.exists(f"/proc/{pid}") for pid, _ in counted)):
            return False
        self._account_ended(counted)
        self._counted = counted
        self._ignored = (self._ignored | ignored) & stats.keys()
        return True

    def _account_ended(self, now: Mapping[Key, _Counted]) -> None:
        """The CPU of the counted processes that ended since the last sample reaches the
        nearest counted ancestor they had that still runs, as reaped CPU, when each parent
        reaped its child; what it did not receive (a parent that ignores SIGCHLD, as
        pyspark's daemon does, so the kernel reaps its children; an orphan reaped by init)
        counts as they had it at the last sample, and so does the CPU of those with no such
        ancestor."""
        claimed: defaultdict[Key, float] = defaultdict(float)
        for key, last in self._counted.items():
            if key in now:
                continue
            heir = self._heir(key, now)
            if heir is None:
                self._ended[last.own] += last.cpu
                self._ended[last.children] += last.reaped
            else:
                claimed[heir] += last.cpu + last.reaped
        for heir, cpu in claimed.items():
            received = now[heir].reaped - self._counted[heir].reaped
            if cpu > received:
                self._ended[now[heir].children] += cpu - received

    def _heir(self, key: Key, now: Mapping[Key, _Counted]) -> Key | None:
        """The ended process's parent at the last sample or, if that ended too, the first
        ancestor it had then that still runs and is counted."""
        parent = self._counted[key].parent
        for _ in range(len(self._counted)):  # (bounded: a chain of parents has no loop)
            if parent is None or parent in now:
                break
            last = self._counted.get(parent)
            parent = last.parent if last is not None else None
        return parent if parent in now and parent in self._counted else None

    def _classify(self, key: Key, parent: Key | None,
                  counted: Mapping[Key, _Counted]) -> _Counted | None:
        """A new process's components: a root's, its counted parent's children's, or by its
        command line; None for one no component claims (not asked again)."""
        root = self.roots.get(key[0])
        if root is not None:
            return _Counted(root.own, root.children or root.own, parent)
        if parent is not None and parent in counted:
            inherited = counted[parent].children
            return _Counted(inherited, inherited, parent)
        matched = self.match(_cmdline(key[0]))
        return None if matched is None else _Counted(matched, matched, parent)
