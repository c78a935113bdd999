"""How fast the Streamslice page loads for a pipeline with many runs: a fresh Airflow (SQLite)
whose hourly pipeline has N runs (default 10,000: published, some failed, some empty, a few
holes) with their asset events, served by the real api-server with the plugin. Prints the
median and worst of several loads of the overview, the pipeline page (default range: the
latest 48 intervals) and a 1,000-interval range. Asserts nothing.
  python bench/ui_page.py [--runs 10000] [--repeat 7]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devtools.airflow_ui import ApiServer

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT)]
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def setup(home: Path, runs: int) -> str:
    dags = home / "dags"
    (dags / "pipelines").mkdir(parents=True)
    shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", dags)
    (dags / "pipelines" / "orders.yaml").write_text(f"""
mode: interval
schedule: "@hourly"
start_date: "{T0.isoformat()}"
kafka:
  bootstrap_servers: 127.0.0.1:9
  topics: [orders]
output:
  path: {home / "out"}
""")
    os.environ.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                       "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                       "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
                       "AIRFLOW__LOGGING__LOGGING_LEVEL": "ERROR"})
    airflow = str(Path(sys.executable).parent / "airflow")
    for args in (["db", "migrate"], ["dags", "reserialize"]):
        subprocess.run([airflow, *args], check=True, capture_output=True)
    insert_runs("orders", runs)
    return str(dags)


def insert_runs(dag_id: str, n: int) -> None:
    from devtools.airflow_history import History, commit_extra
    history = History(dag_id)
    for i in range(n):
        if i % 97 == 13:
            continue  # a hole
        start = T0 + timedelta(hours=i)
        failed = i % 50 == 7
        extra = None
        if not failed:
            extra = commit_extra(0 if i % 31 == 5 else 1000 + i % 400,
                                 {f"orders:{p}": 10 for p in range(8)},
                                 late_records=int(i % 11 == 0),
                                 partition=f"interval={start:%Y%m%dT%H%M%SZ}",
                                 positions={f"orders:{p}": i * 200 for p in range(8)})
        history.run(start=start, end=start + timedelta(hours=1),
                    state="failed" if failed else "success", extra=extra)
        if i % 2000 == 1999:
            history.flush()
    history.close()


def timed(server: ApiServer, path: str, token: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        status, body = server.get(path, token)
        out.append(time.perf_counter() - started)
        assert status == 200, (path, status, body[:300])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="streamslice-ui-bench-"))
    try:
        started = time.perf_counter()
        dags = setup(home, args.runs)
        print(f"{args.runs:,} runs inserted in {time.perf_counter() - started:.1f}s")
        from devtools.airflow_ui import ApiServer
        server = ApiServer(home / "api", Path(dags), ["orders"]).start()
        try:
            token = server.token("admin")
            pages = {"overview": "/streamslice/",
                     "pipeline (latest 48 intervals)": "/streamslice/pipelines/orders",
                     "pipeline (1,000 intervals)": "/streamslice/pipelines/orders?start="
                     "2024-06-01T00:00:00Z&end=2024-07-12T16:00:00Z"}
            timed(server, pages["overview"], token, 2)  # warm up
            for name, path in pages.items():
                t = timed(server, path, token, args.repeat)
                print(json.dumps({"page": name, "runs": args.runs,
                                  "median_s": round(statistics.median(t), 3),
                                  "max_s": round(max(t), 3)}))
        finally:
            server.stop()
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
