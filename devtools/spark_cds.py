"""A class-data-sharing archive for the Spark driver JVM (JDK 13+ dynamic AppCDS), so the
many short Spark jobs of the test suite do not each load and verify Spark's ~15k classes.

Measured on the 2-core machine: a local session's start and first query take 4.8 CPU s with
the archive against 8.1 s without. The archive is made once per machine from a small job that
loads what a read loads (a Python data source, Parquet out and in, a shuffle), kept beside the
virtualenv under a key of the Java and PySpark versions and the jars, and used only by JVMs
whose class path matches it (others start as before; ``-Xlog:cds=off`` keeps the JVM from
printing about it). ``java_options(base)`` gives ``base`` with the archive's flags added, for
``spark.driver.extraJavaOptions``, or ``base`` alone when no archive can be made here."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql.datasource import InputPartition
    from pyspark.sql.types import StructType

ROOT = Path(__file__).resolve().parents[1]
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# A quicker JVM start for short jobs: the test suite's driver flags (benchmarks of reads run
# without them).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _key() -> str:
    import pyspark
    jars = Path(pyspark.__file__).parent / "jars"
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    names = sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
    return hashlib.sha256("\n".join([java, pyspark.__version__, *names]).encode()).hexdigest()[:16]


def archive(base_options: str, cache_dir: Path = ROOT / ".venv" / "spark-cds") -> Path | None:
    """The archive for this machine's Java and Spark, made now if there is none yet."""
    try:
        path = cache_dir / f"spark-{_key()}.jsa"
    except (OSError, ImportError):
        return None
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")
    options = f"{base_options} -XX:ArchiveClassesAtExit={partial} {QUIET}"
    try:
        done = subprocess.run([sys.executable, "-m", "devtools.spark_cds", options], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        return None
    partial.replace(path)
    return path


def java_options(base_options: str) -> str:
    """``base_options`` with the archive's flags added when there is one."""
    path = archive(base_options)
    return f"{base_options} -XX:SharedArchiveFile={path} {QUIET}" if path else base_options


def _workload(options: str) -> None:
    """What a read job loads: a Python data source read, Parquet written and read back, a
    shuffle. The JVM writes the archive when it exits, so this waits for it."""
    import tempfile

    from pyspark import SparkContext
    from pyspark.sql.datasource import DataSource, DataSourceReader

    from streamslice.spark.session import spark_session

    class Rows(DataSource):
        @classmethod
        def name(cls) -> str:
            return "cds_rows"

        def schema(self) -> str:
            return "key string, value binary, offset long"

        def reader(self, schema: StructType) -> DataSourceReader:
            return RowsReader()

    class RowsReader(DataSourceReader):
        def read(self, partition: InputPartition) -> Iterator[tuple[str, bytes, int]]:
            for i in range(100):
                yield (str(i % 7), bytes([i]), i)

    spark = spark_session("local[2]", conf={"spark.driver.extraJavaOptions": options,
                                            "spark.ui.enabled": "false"}, app_name="cds")
    spark.dataSource.register(Rows)
    with tempfile.TemporaryDirectory() as out:
        spark.read.format("cds_rows").load().write.mode("overwrite").parquet(out)
        spark.read.parquet(out).groupBy("key").count().collect()
    spark.stop()
    gateway = SparkContext._gateway
    assert gateway is not None and gateway.proc is not None, "the session's JVM gateway"
    gateway.proc.stdin.close()  # the JVM exits on it and writes the archive
    gateway.proc.wait(timeout=300)


if __name__ == "__main__":
    _workload(sys.argv[1])
