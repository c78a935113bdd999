"""Run the read job with spark-submit (standalone, YARN, Kubernetes): the package travels as a
zip in ``--py-files`` with its launcher (``package``), the plan and the client properties as
files (never on the command line).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..reading.job import ReadJob
from .package import write_launcher, write_zip

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..planning.plan import ReadPlan
    from ..sources import Properties


def spark_submit_binary() -> str:
    found = shutil.which("spark-submit")
    if found:
        return found
    import importlib.util
    spec = importlib.util.find_spec("pyspark")
    if spec and spec.origin:
        candidate = Path(spec.origin).parent / "bin" / "spark-submit"
        if candidate.exists():
            return str(candidate)
    raise errors.ConfigError("spark-submit not found (install Spark or pyspark)")


def package_zip(directory: str | Path) -> Path:
    """``streamslice`` as a zip for --py-files."""
    return write_zip(Path(directory) / "streamslice.zip")


def submit(plan: ReadPlan[Any], staging_uri: str, *, master: str,
           properties: Properties | None = None, conf: dict[str, Any] | None = None,
           options: dict[str, Any] | None = None, log: Callable[[str], object] = print,
           files: Sequence[str] = ()) -> None:
    """Run the read job (``bounded_read``) through spark-submit; raise the job's own error on
    failure. ``files`` go to the executors with ``--files`` (the private credentials file)."""
    with tempfile.TemporaryDirectory(prefix="streamslice-submit-") as work:
        plan_file = Path(work) / "plan.json"
        plan_file.write_text(plan.to_json())
        props_file = Path(work) / "properties.json"
        props_file.touch(mode=0o600)
        props_file.write_text(json.dumps(properties or {}))
        job = ReadJob(str(plan_file), staging_uri, str(props_file), options or {})
        cmd = [spark_submit_binary(), "--master", master, "--py-files",
               str(package_zip(work)), "--conf", f"spark.pyspark.python={sys.executable}",
               "--conf", "spark.sql.session.timeZone=UTC"]
        if files:
            cmd += ["--files", ",".join(files)]
        for key, value in (conf or {}).items():
            cmd += ["--conf", f"{key}={value}"]
        launcher = write_launcher(Path(work) / "bounded_read.py")
        cmd += [str(launcher), *job.argv()]
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("SPARK_REMOTE", None)  # PySpark would take the job to Spark Connect instead
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        for line in proc.stdout.splitlines():
            log(line)
        if proc.returncode != 0:
            raise job_error(proc.stderr, proc.returncode)


def job_error(stderr: str, code: int) -> errors.StreamsliceError:
    """The job's own error (its ``streamslice[kind]`` line), else the tail of stderr."""
    found = errors.from_text(stderr)
    if found is not None:
        return found
    tail = " | ".join(ln for ln in stderr.strip().splitlines()[-5:])
    return errors.SourceError(f"spark-submit exited with {code}: {tail[-800:]}")
