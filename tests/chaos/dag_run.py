"""One DAG run through Airflow (dag.test: the real task callables, Spark local[*] with its JVM
and Python workers) in its own process group, which a fault may SIGKILL as a whole:
python -m tests.chaos.dag_run PIPELINE.yaml"""
import sys


def main(pipeline_file):
    from streamslice.airflow.factory import build_dag
    from streamslice.config import load_pipeline
    run = build_dag(load_pipeline(pipeline_file)).test()
    return 0 if str(run.state) == "success" else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
