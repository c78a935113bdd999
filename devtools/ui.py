"""`make ui`: the Airflow api-server over the demo's metadata database, with the streamslice
plugin, on 127.0.0.1 (all users admins: a local demo only). Then open
http://127.0.0.1:8080/plugin/streamslice — or the Streamslice entry in Airflow's navigation.
  python -m devtools.ui [--port 8080] [--screenshot FILE [--overview FILE] [--runs FILE]]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from devtools.demo import DEMO, ROOT


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--screenshot", help="save the taxi_trips page (opened from the overview "
                    "inside the Airflow UI) and exit")
    ap.add_argument("--overview", help="with --screenshot: also save the overview")
    ap.add_argument("--runs", help="with --screenshot: also save the page's Runs section")
    args = ap.parse_args()
    if not (DEMO / "airflow" / "airflow.db").exists():
        sys.exit("no demo database yet: run `make demo` first")
    url = f"http://127.0.0.1:{args.port}"
    env = dict(os.environ, AIRFLOW_HOME=str(DEMO / "airflow"),
               AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "dags"),
               AIRFLOW__CORE__PLUGINS_FOLDER=str(ROOT / "plugins"),
               AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW__API__BASE_URL=url,
               AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",
               PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    cmd = [str(ROOT / ".venv" / "bin" / "airflow"), "api-server", "--host", "127.0.0.1",
           "--port", str(args.port)]
    if not args.screenshot:
        print(f"Streamslice page: {url}/plugin/streamslice (Ctrl-C stops the server)",
              flush=True)
        os.execve(cmd[0], cmd, env)
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        _screenshot(f"{url}/plugin/streamslice", args.screenshot, args.overview, args.runs)
    finally:
        server.terminate()


def _screenshot(url: str, path: str, overview: str | None = None,
                runs: str | None = None) -> None:
    import urllib.request

    from playwright.sync_api import sync_playwright

    from devtools.airflow_ui import chromium_executable
    for _ in range(120):
        try:
            urllib.request.urlopen(url.split("/plugin")[0] + "/api/v2/version", timeout=2)
            break
        except OSError:
            time.sleep(1)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_executable(),
                                    args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1250})
        page.goto(url)
        frame = page.frame_locator("iframe")
        link = frame.locator('tr[data-pipeline="taxi_trips"] a').first
        link.wait_for(timeout=60_000)
        if overview:
            page.screenshot(path=overview)
        link.click(timeout=60_000)
        frame.locator("#coverage").wait_for(timeout=60_000)
        # The output location is a path on this machine: kept out of the picture.
        page.screenshot(path=path, mask=[frame.locator("code.output")])
        if runs:
            frame.locator("#runs").screenshot(path=runs)
        browser.close()


if __name__ == "__main__":
    main()
