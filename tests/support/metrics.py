"""Where a deployment's monitoring would receive Airflow's metrics, in-process for tests: a
StatsD UDP listener and an OTLP/HTTP receiver (protobuf, decoded with opentelemetry-proto,
which Airflow brings). Both keep what they received; ``wait`` polls for a condition."""
import gzip
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class StatsdListener:
    """A StatsD server's socket: each line received, as ``name:value|type``."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.lines, self._stop = [], False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop:
            try:
                data = self.sock.recv(65536)
            except OSError:
                continue
            self.lines.extend(data.decode().splitlines())

    def stop(self):
        self._stop = True
        self._thread.join()
        self.sock.close()


class OtlpReceiver:
    """An OTLP/HTTP metrics endpoint (``POST /v1/metrics``): every data point received, as
    ``(metric name, attributes, value)``; the value is a sum or gauge's number, or a
    histogram's ``(count, sum)``."""

    def __init__(self):
        points: list[tuple[str, dict[str, str], Any]] = []  # a number, or a (count, sum)
        self.points = points

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
                    ExportMetricsServiceRequest,
                )
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportMetricsServiceRequest.FromString(body)
                points.extend(_points(request) if self.path == "/v1/metrics" else [])
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _points(request):
    def attrs(point):
        return {a.key: a.value.string_value for a in point.attributes}
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                data = getattr(metric, kind)
                for point in data.data_points:
                    if kind in ("sum", "gauge"):
                        value = point.as_double if point.WhichOneof("value") == "as_double" \
                            else point.as_int
                    else:
                        value = (point.count, point.sum)
                    yield metric.name, attrs(point), value


RUN = """
import sys
from airflow.sdk.configuration import conf
from airflow.sdk.observability import stats
from airflow.sdk.observability.metrics import stats_utils
# What Airflow's task runner does first in every task process (task_runner.main);
# dag.test() runs the tasks in its own process and skips it.
stats.initialize(factory=stats_utils.get_stats_factory(),
                 export_legacy_names=conf.getboolean("metrics", "legacy_names_on"))
from streamslice.config import load_pipeline
from tests.support.pipelines import run_dag
run_dag(load_pipeline(sys.argv[1]))
"""


def run_with_metrics(pipeline_file, settings, env=None):
    """Run the pipeline's DAG once with dag.test() in a process of its own whose environment
    switches Airflow's metrics on as a deployment does (``settings``: ``[metrics]`` keys;
    ``env``: other variables, such as OpenTelemetry's own)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]),
           **{f"AIRFLOW__METRICS__{k.upper()}": str(v) for k, v in settings.items()},
           **(env or {})}
    out = subprocess.run([sys.executable, "-c", RUN, str(pipeline_file)], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise AssertionError(f"the run failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out
