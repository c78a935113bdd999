"""docs/getting-started.md, followed as a newcomer follows it, through Airflow's real
components: ``streamslice init`` and ``streamslice validate`` as the page runs them (no
``--dir``) with a DAGs folder of another name than ``dags``, its pipeline file, its producer
snippet, its ``airflow dags test`` command line, its reading snippet (whose printed line must
be what the page says it prints), then its ``streamslice backfill`` of the next two hours on
the running scheduler, whose table must be the page's. Only the broker's address, the topic,
the output folder and the pipeline's name (the session's Airflow is shared) are replaced, and
the pipeline reads on the session's Spark Connect server (as ``SPARK_REMOTE`` would make it:
one task a run) so that no run starts a JVM of its own. A page that drifts from what the
product does fails here."""
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.checks import present
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "getting-started.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", PAGE, re.S | re.M)
OUTPUT = "/tmp/streamslice-output"
CLI = str(Path(sys.executable).parent / "streamslice")


def block(language, containing):
    found = [text for lang, text in BLOCKS if lang == language and containing in text]
    assert len(found) == 1, (language, containing)
    return found[0]


def command(starting):
    """The page's one command line that starts with ``starting``."""
    found = [line for _, text in BLOCKS for line in text.splitlines()
             if line.startswith(starting)]
    assert len(found) == 1, starting
    return found[0]


def test_the_getting_started_page_lands_an_interval_and_backfills_two_more(
        broker, airflow_services, spark_connect, tmp_path, capsys):
    airflow = airflow_services
    topic, name, output = unique("orders"), unique("orders").replace("-", "_"), tmp_path / "out"

    def ours(text):
        return (text.replace("localhost:9092", broker.bootstrap).replace(OUTPUT, str(output))
                .replace('"orders"', f'"{topic}"').replace("[orders]", f"[{topic}]"))

    # 2. the DAGs folder: `streamslice init`, then the pipeline file, then `streamslice
    # validate`, run from a folder without dags/ in it, the DAGs folder set as Airflow's
    dags, work = tmp_path / "team-dags", tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in airflow.env.items() if k != "STREAMSLICE_PIPELINES"}
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(dags)

    def cli(line, environment=env):
        return subprocess.run([CLI, *line.split()[1:]], env=environment, cwd=work,
                              capture_output=True, text=True, timeout=600)
    made = cli(command("streamslice init"))
    assert made.returncode == 0, made.stderr
    assert (dags / "streamslice_pipelines.py").read_text() == block("python", "build_dags")
    assert (dags / "pipelines" / "example_events.yaml").exists()
    pipeline_text = ours(block("yaml", "mode: interval"))
    (dags / "pipelines" / "orders.yaml").write_text(pipeline_text)
    checked = cli(command("streamslice validate"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert [line.split()[:2] for line in checked.stdout.splitlines()] == \
        [["ok", "example_events"], ["ok", "orders"]]
    scope: dict[str, Any] = {"__file__": str(dags / "streamslice_pipelines.py")}
    exec(compile((dags / "streamslice_pipelines.py").read_text(), "factory", "exec"), scope)
    assert [t.task_id for t in scope["orders"].tasks] == ["plan", "read", "commit"]

    # the same file in the running Airflow's DAGs folder, under the test's own name
    remote = f"spark:\n  runner: connect\n  remote: {spark_connect.remote}\n"
    (airflow.pipelines / f"{name}.yaml").write_text(pipeline_text + remote)
    airflow.wait_for_dag(name)

    # 3. some records
    exec(ours(block("python", "Producer(")), {})

    # 4. land an interval: the page's `airflow dags test`, with the running Airflow's settings
    dated = command("airflow dags test orders").split()
    airflow.airflow(*dated[1:3], name, *dated[4:])
    listed = re.findall(rf"^{re.escape(OUTPUT)}/(\S+)$", PAGE, re.M)
    assert len(listed) >= 2
    for path in listed:
        assert (output / path.replace("pipeline=orders", f"pipeline={name}")).exists(), path
    capsys.readouterr()
    reading = block("python", "read_table").replace(OUTPUT, str(output)) \
        .replace("pipeline=orders", f"pipeline={name}")
    exec(reading, {})
    said = present(re.search(r"print\(.*\)\s+# (.*)$", reading, re.M)).group(1)
    assert capsys.readouterr().out.strip() == said
    first = json.loads((output / f"pipeline={name}" / "interval=20240501T000000Z" /
                        "_manifest.json").read_text())

    # 5. the next two hours, by the page's backfill on the running scheduler: the manual run
    # above holds no logical date either of them needs
    backfill = command("streamslice backfill orders").replace(" orders ", f" {name} ")
    done = cli(backfill, environment={k: v for k, v in airflow.env.items()
                                      if k != "STREAMSLICE_PIPELINES"})
    airflow.airflow("dags", "pause", name)  # (unpaused, it would go on running each hour)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = block("", "state    records").strip().splitlines()
    assert [line.rstrip() for line in done.stdout.strip().splitlines()] == shown
    again = json.loads((output / f"pipeline={name}" / "interval=20240501T000000Z" /
                        "_manifest.json").read_text())
    assert again["committed_at"] == first["committed_at"]  # outside the range: not run again

    # and as docs/outputs.md reads a dataset with DuckDB: the folders' keys are columns
    import duckdb
    outputs = (Path(__file__).resolve().parents[2] / "docs" / "outputs.md").read_text()
    query = " ".join(present(re.search(r"`(SELECT \* FROM read_parquet\(.*?\))`", outputs,
                                       re.S)).group(1).split())
    query = re.sub(r"'output/pipeline=\w+/", f"'{output}/pipeline={name}/", query)
    rows = duckdb.sql(f"SELECT count(*), min(id), max(id), count(DISTINCT interval), "
                      f"any_value(pipeline) FROM ({query})").fetchall()
    assert rows == [(1500, 0, 1499, 3, name)]
