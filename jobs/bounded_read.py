"""The streamslice read job: one ReadPlan in, one staged dataset out.

spark-submit-able (the package ships with --py-files), and runnable as a plain script, which
starts Spark in-process on local[*]:

  spark-submit --master spark://host:7077 --py-files streamslice.zip jobs/bounded_read.py \
      --plan plan.json --staging file:///lake/pipeline=p/_staging/batch=00000001/try1 \
      --properties client.json

Client properties (credentials) come from a file, never the command line. Exit status 0 on
success; 2 with one ``streamslice: <Error>: message`` line on stderr when the job fails.
"""
import argparse
import json
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description="Read one streamslice ReadPlan into a staging area.")
    ap.add_argument("--plan", required=True, help="ReadPlan JSON file (or '-' for stdin)")
    ap.add_argument("--staging", required=True, help="staging URI of this attempt")
    ap.add_argument("--properties", help="JSON file of client properties (Kafka or AWS)")
    ap.add_argument("--client", help="confluent-kafka | kafka-python (Kafka)")
    ap.add_argument("--consumer-arns", help="JSON stream → EFO consumer ARN (Kinesis)")
    ap.add_argument("--format", default="parquet")
    ap.add_argument("--compression", default="snappy")
    ap.add_argument("--master", default=os.environ.get("STREAMSLICE_MASTER", "local[*]"),
                    help="used when not launched by spark-submit")
    ap.add_argument("--verbose", action="store_true",
                    help="keep Spark's own error logs (the job reports its error itself)")
    args = ap.parse_args(argv)
    if not args.verbose:
        os.environ.setdefault("STREAMSLICE_SPARK_LOG_LEVEL", "FATAL")

    from streamslice.errors import StreamsliceError
    from streamslice.plan import ReadPlan
    from streamslice.spark.job import run_read
    from streamslice.spark.session import spark_session
    try:
        plan = ReadPlan.from_json(read_text(args.plan))
        props = json.loads(read_text(args.properties)) if args.properties else {}
        arns = json.loads(args.consumer_arns) if args.consumer_arns else None
        spark = spark_session(master=args.master)
        out = run_read(spark, plan, args.staging, properties=props, client=args.client,
                       output_format=args.format, compression=args.compression,
                       consumer_arns=arns)
    except StreamsliceError as exc:
        print(f"streamslice: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"streamslice: StreamsliceError: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"staged": out, "splits": len(plan.splits)}))
    return 0


def read_text(path):
    """A local file, '-' for stdin, or a URI (s3://…) as EMR Serverless runs pass them."""
    if path == "-":
        return sys.stdin.read()
    if "://" in path:
        import pyarrow.fs as pafs
        fs, inner = pafs.FileSystem.from_uri(path)
        with fs.open_input_stream(inner) as f:
            return f.read().decode()
    with open(path) as f:
        return f.read()


if __name__ == "__main__":
    sys.exit(main())
