"""Every test passes alone, not only after the tests that ran before it in the suite.

``python -m devtools.alone tests/unit`` runs each test file in a pytest process of its own;
in a file with state that outlives one test (a fixture of module, class, package or session
scope defined there, a ``global``, a cached function), each test runs alone too, since
there a test may pass only because an earlier one of its module set that state up.
``--shuffled N`` then runs the given folders N times as one process in a shuffled order
(pytest-random-order, opt-in with ``--random-order``), each with a seed it prints. A run that
fails is run again at once: one that passes then failed under load (a flaky test, a bug too),
one that fails again depends on what runs before it or is broken. The summary lists both,
with each failure's log; the exit status is 1 if any run failed. ``make test-alone`` runs
it over the whole suite (long: integration and chaos files start their own services)."""
from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]

# What makes a file's tests share state: a fixture wider than one test defined in the file,
# a module global rebound by a test, a cache kept for the module's life.
SHARED_STATE = re.compile(
    r"scope\s*=\s*[\"'](?:module|class|package|session)[\"']"
    r"|^\s+global\s"
    r"|\b(?:lru_cache|functools\.cache|cached_property)\b|^@cache\b",
    re.M)

# wide enough that the short summary keeps each failure's message
WIDE = {**os.environ, "COLUMNS": "250"}
Outcome = Literal["passed", "flaky", "failed"]


@dataclass(frozen=True)
class Result:
    target: str  # a file, a test's node id, or a shuffled run's seed
    outcome: Outcome
    seconds: float
    log: Path | None  # the first failing run's output


def files_in(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if not path.exists():
            raise SystemExit(f"devtools.alone: no such test file or folder: {path}")
        files += [path] if path.is_file() else sorted(path.rglob("test_*.py"))
    return files


def shares_state(file: Path) -> bool:
    return SHARED_STATE.search(file.read_text()) is not None


def node_ids(file: Path) -> list[str]:
    """The node ids pytest collects from ``file`` (parametrized cases each their own)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", str(file)],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    # named from the file as given: pytest names them from its rootdir, which may be another
    ids = [f"{file}::{line.strip().split('::', 1)[1]}" for line in out.stdout.splitlines()
           if "::" in line]
    if not ids:  # a file that does not even collect fails as itself
        return [str(file)]
    return ids


def pytest_run(args: list[str], timeout: float, logs: Path, name: str) -> tuple[bool, Path]:
    log = logs / (re.sub(r"[^\w.-]+", "_", name)[-150:] + ".log")
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-rfE", *args]
    with log.open("w") as out:
        out.write(" ".join(command) + "\n")
        out.flush()
        try:
            done = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False, env=WIDE)
        except subprocess.TimeoutExpired:
            out.write(f"\n[devtools.alone] no result after {timeout:.0f} s\n")
            return False, log
    return done.returncode == 0, log


def run(target: str, args: list[str], timeout: float, logs: Path) -> Result:
    """One run, and a second one at once if the first fails."""
    start = time.monotonic()
    passed, log = pytest_run(args, timeout, logs, target)
    if passed:
        return Result(target, "passed", time.monotonic() - start, None)
    first = log.rename(log.with_suffix(".first.log"))
    again, _ = pytest_run(args, timeout, logs, target)
    return Result(target, "flaky" if again else "failed", time.monotonic() - start, first)


def targets(files: list[Path], each_test: bool) -> list[str]:
    out: list[str] = []
    for file in files:
        out += node_ids(file) if each_test or shares_state(file) else [str(file)]
    return out


def summary(results: list[Result]) -> str:
    lines = [f"{len(results)} runs: "
             + ", ".join(f"{sum(r.outcome == o for r in results)} {o}"
                         for o in ("passed", "flaky", "failed"))]
    for result in results:
        if result.outcome != "passed":
            lines.append(f"  {result.outcome.upper():6} {result.target}  (log: {result.log})")
            lines += [f"           {line}" for line in failures(result.log)]
    return "\n".join(lines)


def failures(log: Path | None) -> list[str]:
    """The log's short summary lines (FAILED/ERROR), or its last line."""
    if log is None:
        return []
    text = log.read_text(errors="replace").splitlines()
    said = [line for line in text if line.startswith(("FAILED ", "ERROR "))]
    return (said or text[-1:])[:5]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m devtools.alone", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("paths", nargs="+", help="test folders or files")
    ap.add_argument("--each-test", action="store_true",
                    help="run every test alone, not only those of files with shared state")
    ap.add_argument("--by-file", action="store_true",
                    help="run each file as one, even one with shared state")
    ap.add_argument("--shuffled", type=int, default=0, metavar="N",
                    help="instead: run the paths as one process N times in a shuffled order")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds one pytest process may take (default 1800)")
    ap.add_argument("--logs", type=Path, help="folder for the runs' output (default: a new "
                                              "temporary folder)")
    ns = ap.parse_args(argv)
    logs = ns.logs or Path(tempfile.mkdtemp(prefix="streamslice-alone-"))
    logs.mkdir(parents=True, exist_ok=True)
    if ns.shuffled:
        seeds = [random.randrange(1, 10**6) for _ in range(ns.shuffled)]
        plan = [(f"seed {seed}", ["--random-order", "--random-order-bucket=global",
                                  f"--random-order-seed={seed}", *ns.paths])
                for seed in seeds]
    else:
        ids = [p for p in ns.paths if "::" in p]  # tests named: each runs alone
        files = files_in([p for p in ns.paths if "::" not in p])
        plan = [(t, [t]) for t in ids] + ([(str(f), [str(f)]) for f in files] if ns.by_file
                                          else [(t, [t]) for t in targets(files, ns.each_test)])
    results = []
    for n, (target, args) in enumerate(plan, 1):
        results.append(result := run(target, args, ns.timeout, logs))
        print(f"[{n}/{len(plan)}] {result.outcome:6} {result.seconds:6.1f}s {target}",
              flush=True)
    print(summary(results))
    return 0 if all(r.outcome == "passed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
