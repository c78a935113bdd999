"""The streamslice read job: one ReadPlan in, one staged dataset out.

spark-submit runs it through a launcher (``streamslice package DIR`` writes both the launcher and
the package zip; ``jobs/bounded_read.py`` is the same launcher in a checkout), and it runs as a
plain script, which starts Spark in-process on local[*]:

  spark-submit --master spark://host:7077 --py-files streamslice.zip bounded_read.py \
      --plan plan.json --staging file:///lake/_streamslice/pipeline=p/staging/batch=00000001/try1 \
      --properties client.json

Client properties (credentials) come from a file, never the command line. Exit status 0 on
success; 2 with one ``streamslice[<kind>]: message`` line on stderr when the job fails.
"""
from __future__ import annotations

import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    from streamslice.errors import StreamsliceError
    from streamslice.reading.job import ReadJob
    from streamslice.sources import read_plan
    job, args = ReadJob.from_argv(argv)
    if not args.verbose:
        os.environ.setdefault("STREAMSLICE_SPARK_LOG_LEVEL", "FATAL")
    from streamslice.spark.job import run_read
    from streamslice.spark.session import spark_session
    try:
        plan = read_plan(job.load_plan_text())
        spark = spark_session(master=args.master or os.environ.get("STREAMSLICE_MASTER",
                                                                   "local[*]"))
        out = run_read(spark, plan, job.staging, properties=job.load_properties(),
                       options=job.options)
    except StreamsliceError as exc:
        print(exc.to_line(), file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(StreamsliceError(str(exc)).to_line(), file=sys.stderr)
        return 2
    print(json.dumps({"staged": out, "splits": len(plan.splits)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
