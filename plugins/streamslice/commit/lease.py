"""One holder at a time: a lease in the output's work area (``<work>/leases/<name>``), so two
commits of one interval (a manual run during a backfill, a retried read-ahead leader) never
interleave their publishes, and two checkpoint writes never interleave their read and write.

Airflow gives a task no compare-and-set (its asset state store only gets, sets and deletes),
so the lease is the work area's own: a holder writes ``holder.json`` into a folder of its own
and renames that folder to the lease's name. A rename onto a folder that exists and is not
empty fails, so of two takers one gets the lease, on every file system that renames
atomically (local disks, shared POSIX file systems). Object stores cannot rename: there the
rename is a copy, and the lease only narrows the window (``atomic``).

A lease is released by its holder. One left by a holder that died is broken: at once when
the holder was a process of this host that is gone, or that the caller's ``alive`` (Airflow:
the run's task is not running) says is dead; otherwise once it is ``ttl_ms`` old. An earlier
try of the same run takes its own lease back at once.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pyarrow.fs as pafs

from ..aws.storage import filesystem
from ..errors import CommitError

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from ..planning.plan import OutputTarget

log = logging.getLogger("streamslice")
TTL_MS = 15 * 60_000  # a commit holds its lease for seconds; this long, its holder is dead
WAIT_S = TTL_MS / 1000 + 60  # a taker waits out a dead holder's lease, then fails
POLL_S = 0.2
HOLDER = "holder.json"


@dataclass(frozen=True)
class Holder:
    run_id: str
    token: str
    since: int  # epoch ms
    host: str = ""
    pid: int = 0

    def stale(self, now_ms: int, ttl_ms: int) -> bool:
        return now_ms - self.since >= ttl_ms

    def gone(self) -> bool:
        """A process of this host that no longer exists."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # another user's process: it exists
        return False


class Lease:
    """``with Lease(output, name, run_id):`` holds ``name`` for ``run_id`` inside the block."""

    def __init__(self, output: OutputTarget, name: str, run_id: str, *,
                 alive: Callable[[str], bool] | None = None, ttl_ms: int = TTL_MS,
                 wait_s: float = WAIT_S) -> None:
        self.fs, work = filesystem(output.work, output.auth)
        self.folder = f"{work}/leases"
        self.path = f"{self.folder}/{quote(name, safe='')}"
        self.name, self.run_id, self.ttl_ms, self.wait_s = name, run_id, ttl_ms, wait_s
        self.alive = alive
        self.me = Holder(run_id, uuid.uuid4().hex, 0, socket.gethostname(), os.getpid())

    @property
    def atomic(self) -> bool:
        return bool(self.fs.type_name == "local")

    def __enter__(self) -> Lease:
        self.take()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def take(self) -> None:
        """Hold the lease, waiting (up to ``wait_s``) for another holder to release it."""
        deadline = time.monotonic() + self.wait_s
        said = False
        while not self._try_take():
            held = self.holder()
            if held is not None and self._dead(held):
                log.info("Breaking the lease on %s that run %s left.", self.name, held.run_id)
                self._break(held)
                continue
            if time.monotonic() > deadline:
                raise CommitError(f"{self.name} stayed held by run "
                                  f"{held.run_id if held else '?'} for {self.wait_s:.0f}s; "
                                  "nothing was published by this run. Re-run it once that "
                                  "run has ended.")
            if not said and held is not None:
                log.info("Run %s holds %s; waiting for it.", held.run_id, self.name)
                said = True
            time.sleep(POLL_S)

    def _dead(self, held: Holder) -> bool:
        """Whether ``held`` no longer holds: an earlier try of this run, a process gone, a
        run ``alive`` says is not running, or a lease past ``ttl_ms``."""
        return (held.run_id == self.run_id or held.gone() or held.stale(_now(), self.ttl_ms)
                or (self.alive is not None and not self.alive(held.run_id)))

    def holder(self) -> Holder | None:
        return _read_holder(self.fs, self.path)

    def release(self) -> None:
        """Give the lease up if this holder still holds it."""
        held = self.holder()
        if held is not None and held.token == self.me.token:
            self._break(held)

    def _try_take(self) -> bool:
        self.me = replace(self.me, since=_now())
        mine = f"{self.folder}/.{self.me.token}"
        self.fs.create_dir(mine, recursive=True)
        with self.fs.open_output_stream(f"{mine}/{HOLDER}") as out:
            out.write(json.dumps(self.me.__dict__).encode())
        if self.atomic:
            try:
                self.fs.move(mine, self.path)  # refused while another holder's is there
                return True
            except OSError:
                self.fs.delete_dir(mine)
                return False
        if self.fs.get_file_info(f"{self.path}/{HOLDER}").type == pafs.FileType.File:
            self.fs.delete_dir(mine)
            return False
        self.fs.copy_file(f"{mine}/{HOLDER}", f"{self.path}/{HOLDER}")
        self.fs.delete_dir(mine)
        return True

    def _break(self, held: Holder) -> None:
        """Remove ``held``'s lease: renamed aside first where renames are atomic, so of two
        breakers one removes it (and a newer holder's lease is never removed by mistake)."""
        if not self.atomic:
            self.fs.delete_dir(self.path)
            return
        aside = f"{self.folder}/.broken-{uuid.uuid4().hex}"
        try:
            self.fs.move(self.path, aside)
        except OSError:
            return  # released or broken by another meanwhile
        taken = _read_holder(self.fs, aside)
        if taken is not None and taken.token != held.token:
            try:  # a new holder took it between the look and the move: give it back
                self.fs.move(aside, self.path)
                return
            except OSError:
                pass  # taken again since: that holder's lease stands, this one is gone
        self.fs.delete_dir(aside)


def _read_holder(fs: pafs.FileSystem, path: str) -> Holder | None:
    try:
        with fs.open_input_stream(f"{path}/{HOLDER}") as f:
            data: dict[str, Any] = json.loads(f.read())
    except (FileNotFoundError, ValueError):
        return None  # released meanwhile, or being written
    return Holder(data["run_id"], data["token"], int(data["since"]),
                  str(data.get("host", "")), int(data.get("pid", 0)))


def _now() -> int:
    return int(time.time() * 1000)
