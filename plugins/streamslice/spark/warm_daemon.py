"""PySpark's Python daemon for the worker's kept server (``local_server``), with the modules
every read's Python workers import loaded before it forks them: pyarrow (whose first array
imports pandas, ~0.3 CPU s a process), numpy and confluent-kafka. The daemon forks a fresh
worker for each data source call of a run (its creation, its planning) and for the reading
tasks; each of them imported these again, about a third of a small run's Python CPU on the
server. Started with ``spark.python.daemon.module``; it imports nothing of streamslice (the
package reaches the workers as each session's artifact)."""
from __future__ import annotations

import contextlib

with contextlib.suppress(ImportError):
    import numpy  # noqa: F401
with contextlib.suppress(ImportError):
    import pyarrow
    import pyarrow.parquet  # noqa: F401
    pyarrow.array([0])  # imports pandas, as a worker's first array would
with contextlib.suppress(ImportError):
    import confluent_kafka  # noqa: F401

from pyspark.daemon import manager  # noqa: E402

if __name__ == "__main__":
    manager()
