"""docs/getting-started.md, followed as a newcomer follows it: its DAGs-folder file and
pipeline file, its producer snippet, its ``airflow dags test`` date, then its reading snippet,
whose printed line must be what the page says it prints. Only the broker's address, the
topic, the output folder and the pipeline's name (the session's Airflow is shared) are
replaced. A page that drifts from what the product does fails here."""
import json
import re
from pathlib import Path

import pytest

from tests.support.pipelines import unique, write_pipeline

pytestmark = pytest.mark.integration

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "getting-started.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", PAGE, re.S | re.M)
OUTPUT = "/tmp/streamslice-output"


def block(language, containing):
    found = [text for lang, text in BLOCKS if lang == language and containing in text]
    assert len(found) == 1, (language, containing)
    return found[0]


def test_the_getting_started_page_lands_its_interval(broker, spark, airflow_db, tmp_path,
                                                     capsys):
    from streamslice.airflow.factory import build_dags
    topic, name, output = unique("orders"), unique("orders").replace("-", "_"), tmp_path / "out"

    def ours(text):
        return (text.replace("localhost:9092", broker.bootstrap).replace(OUTPUT, str(output))
                .replace('"orders"', f'"{topic}"').replace("[orders]", f"[{topic}]"))

    # 2. the DAGs folder: `streamslice init` writes the factory file the page shows, and that
    # file finds the pipeline file as a DAG named after it
    from streamslice.cli import main
    dags = tmp_path / "dags"
    init, = [c for _, c in BLOCKS if c.startswith("streamslice init")]
    assert main([*init.split()[1:], str(dags)]) == 0
    assert (dags / "streamslice_pipelines.py").read_text() == block("python", "build_dags")
    assert (dags / "pipelines" / "example_events.yaml").exists()
    pipeline_text = ours(block("yaml", "mode: interval"))
    (dags / "pipelines" / "orders.yaml").write_text(pipeline_text)
    scope = {"__file__": str(dags / "streamslice_pipelines.py")}
    exec(compile((dags / "streamslice_pipelines.py").read_text(), "factory", "exec"), scope)
    assert scope["orders"].dag_id == "orders"
    # `streamslice validate` as the page runs it: no --dir, from the folder above dags/
    command, = [c for _, c in BLOCKS if c.startswith("streamslice validate")]
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        mp.delenv("STREAMSLICE_PIPELINES", raising=False)
        assert main([*command.split()[1:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] == ["example_events", "orders"]
    assert [t.task_id for t in scope["orders"].tasks] == ["plan", "read", "commit"]
    # (run under a name of its own: the session's Airflow keeps every test's checkpoints)
    cfg = write_pipeline(name, pipeline_text)
    assert set(build_dags(Path(cfg.file).parent)) >= {name}

    # 3. some records
    exec(ours(block("python", "Producer(")), {})

    # 4. land an interval, dated as the page's `airflow dags test` dates it
    command = re.search(r"^airflow dags test orders (\S+)$", PAGE, re.M).group(1)
    from datetime import datetime

    from tests.support.pipelines import run_dag
    run_dag(cfg, logical_date=datetime.fromisoformat(command))
    listed = re.findall(rf"^{re.escape(OUTPUT)}/(\S+)$", PAGE, re.M)
    assert len(listed) >= 2
    for path in listed:
        assert (output / path.replace("pipeline=orders", f"pipeline={name}")).exists(), path

    capsys.readouterr()
    reading = block("python", "read_table").replace(OUTPUT, str(output)) \
        .replace("pipeline=orders", f"pipeline={name}")
    exec(reading, {})
    said = re.search(r"print\(.*\)\s+# (.*)$", reading, re.M).group(1)
    assert capsys.readouterr().out.strip() == said

    # and as docs/outputs.md reads a dataset with DuckDB: the folders' keys are columns
    import duckdb
    outputs = (Path(__file__).resolve().parents[2] / "docs" / "outputs.md").read_text()
    query = " ".join(re.search(r"`(SELECT \* FROM read_parquet\(.*?\))`", outputs,
                               re.S).group(1).split())
    query = re.sub(r"'output/pipeline=\w+/", f"'{output}/pipeline={name}/", query)
    rows = duckdb.sql(f"SELECT count(*), min(id), max(id), any_value(interval), "
                      f"any_value(pipeline) FROM ({query})").fetchall()
    assert rows == [(515, 0, 514, "20240501T000000Z", name)]
