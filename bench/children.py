"""Benchmark children: each measured reader runs in a process of its own
(``<script> --child KIND JSON``) and times its own read after its imports; the parent also
takes the whole process's CPU from the OS (``wait4``)."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devtools.services import KafkaBroker

ChildArgs = dict[str, Any]  # what the parent passes a child, as JSON
Child = Callable[[ChildArgs], Sequence[object]]  # its result, a JSON list (records, CPU s, wall s…)
Measured = tuple[int, float, float, float]  # a child's records, CPU s, wall s, process CPU s


def cpu_now() -> float:
    """CPU seconds (user + system) this process has used so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_child(script: str, kind: str, args: ChildArgs) -> tuple[Any, ...]:
    """The child's own result (a JSON list) followed by its whole-process CPU seconds: for the
    read benchmarks' children a ``Measured``."""
    proc = subprocess.Popen([sys.executable, script, "--child", kind, json.dumps(args)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise RuntimeError(f"{kind} child failed ({status})")
    return (*json.loads(out), usage.ru_utime + usage.ru_stime)


def serve_child(child: list[str], functions: Mapping[str, Child]) -> None:
    """In the child: run ``functions[kind](args)`` and print its result for the parent."""
    kind, args = child
    print(json.dumps(functions[kind](json.loads(args))))


def parse_args(children: Mapping[str, Child], records: int,
               **ints: int) -> argparse.Namespace | None:
    """The read benchmarks' command line (``--records``, ``--partitions``, ``--repeat``,
    ``--end-to-end`` and the integer options ``ints`` with their defaults). In a child
    (``--child KIND JSON``) it runs ``children[KIND]`` instead and returns None."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=records)
    for name, default in ints.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--end-to-end", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        serve_child(args.child, children)
        return None
    return args


def partition_ends(records: int, partitions: int) -> dict[int, int]:
    """Where each partition ends when ``records`` were spread round-robin over them."""
    return {p: records // partitions + (p < records % partitions) for p in range(partitions)}


@contextlib.contextmanager
def local_broker(prefix: str = "streamslice-bench-") -> Iterator[tuple[Path, KafkaBroker]]:
    """A local Kafka broker in a scratch folder for one benchmark run, yielding
    ``(folder, broker)``; stopped and removed after, also when the run fails. Sets
    ``PYSPARK_PYTHON`` for the Spark workers of end-to-end runs."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from devtools.services import KafkaBroker
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = KafkaBroker(work / "kafka").start()
    try:
        yield work, broker
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
