"""Every ``streamslice`` command the README and the docs show, typed as a user types it after
`make demo`: from the checkout, AIRFLOW_HOME unset, the demo's services running. The world is
the demo's own set-up (``devtools.demo``: its connections stored in its metadata database,
``.demo/env``, its topics, stream and schema subject) over the session's broker and Kinesis
server, with fewer records. Each command succeeds, or fails with one line and no traceback;
the ones the README says work after the demo do."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "streamslice")
# What the README promises works after `make demo` (its *The command line after the demo*).
WORKS = {"streamslice validate", "streamslice plan taxi_trips --at 2024-05-01T01:30:00Z",
         "streamslice plan taxi_trips_avro --at 2024-05-01T01:30:00Z",
         "streamslice offsets show taxi_trips", "streamslice efo list taxi-trips"}


def documented_commands():
    """``streamslice …`` lines in the README's and the docs' code blocks and inline code."""
    found = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        blocks = "\n".join(re.findall(r"^```[a-z]*\n(.*?)^```$", text, re.S | re.M))
        found |= {c.strip() for c in re.findall(r"^(?:\$ )?(streamslice [^\n#]*)", blocks, re.M)}
        found |= {c.strip() for c in re.findall(r"`(streamslice [a-z]+ [^`]*)`", text)}
    return sorted(c for c in found if "\\" not in c)


@pytest.fixture(scope="module")
def checkout(broker, kinesis, tmp_path_factory):
    """A checkout after `make demo`: its pipelines, and the demo's set-up over the session's
    services plus a schema registry of its own."""
    from devtools import demo
    from devtools.services import SchemaRegistry
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "dags", root / "dags", ignore=shutil.ignore_patterns("__pycache__"))
    (root / ".demo").mkdir()
    registry = SchemaRegistry(data=root / ".demo" / "schema-registry.json").start()
    try:
        demo.setup_airflow(demo.connections(broker.bootstrap, kinesis.endpoint, registry.url),
                           demo=root / ".demo", root=root)
        demo.produce_trips(broker.bootstrap, per_hour=100)
        demo.create_avro_topic(broker.bootstrap)
        demo.produce_avro(broker.bootstrap, registry, 0, demo.AVRO_V1)
        demo.ensure_stream(kinesis.client())
        yield root
    finally:
        registry.stop()


def run(line, root, **env):
    """``line`` as typed in a shell at the checkout's root, with no Airflow settings of the
    test session's (a user's fresh shell)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "AWS_"))}
    clean.update(PYTHONPATH=str(ROOT / "plugins"), **env)
    words = shlex.split(line.replace("…", "0"))
    return subprocess.run([CLI, *words[1:]], cwd=root, capture_output=True, text=True,
                          env=clean, timeout=300)


def test_every_documented_command_works_or_says_why_in_one_line(checkout):
    commands = documented_commands()
    assert WORKS <= set(commands)
    assert {c.split()[1] for c in commands} >= {"validate", "plan", "offsets", "backfill", "efo"}
    demo_home = f"AIRFLOW_HOME={checkout / '.demo' / 'airflow'}"
    for line in commands:
        out = run(line, checkout)
        said = out.stderr.splitlines()
        assert said and said[0].startswith("streamslice: using the demo's Airflow (") and \
            demo_home in said[0], (line, out.stderr)
        assert "Traceback" not in out.stdout + out.stderr, (line, out.stderr)
        if line in WORKS:
            assert out.returncode == 0, (line, out.stderr)
            assert out.stdout.strip(), line
        elif out.returncode != 0:
            errors = [s for s in said[1:] if s.startswith("streamslice: ")]
            assert out.returncode == 1 and len(errors) == 1, (line, out.stderr)


def test_the_demos_connections_are_in_its_database_and_the_plan_reads_through_them(checkout):
    """The Avro pipeline's plan resolves the broker's and the registry's connections (#28),
    from the metadata database: nothing of the demo's is in the command's environment."""
    out = run("streamslice plan taxi_trips_avro --at 2024-05-01T00:30:00Z --json", checkout)
    assert out.returncode == 0, out.stderr
    import json
    plan = json.loads(out.stdout)
    assert plan["decode"]["value"]["options"]["subject"] == "taxi-trips-avro-value"
    assert [(s["topic"], s["partition"]) for s in plan["splits"]] == \
        [("taxi-trips-avro", 0), ("taxi-trips-avro", 1)]


def test_offsets_reset_resolves_the_source_connection_from_the_demos_database(checkout):
    """Each command that reaches a service resolves the pipeline's connections as its tasks
    do: plan (above), efo list (the README's), and a reset, which asks the broker for the
    partitions' earliest offsets through ``streamslice_kafka`` before it stores them. Here no
    DAG has run, so Airflow knows no asset to store them in: the one line says that, not that
    a connection is missing (the demo's own runs make the asset)."""
    out = run("streamslice offsets reset taxi_trips --to earliest", checkout)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[-1] == ("streamslice: asset 'streamslice/taxi_trips' is "
                                           "not known to Airflow yet (has the DAG been "
                                           "parsed?)")


def test_a_set_airflow_home_wins_over_the_demos(checkout, tmp_path):
    out = run("streamslice offsets show taxi_trips", checkout, AIRFLOW_HOME=str(tmp_path))
    assert "using the demo's Airflow" not in out.stderr
    assert out.stderr.strip() == (
        f"streamslice: Airflow's metadata database for AIRFLOW_HOME={tmp_path} is not set up "
        "(no such table: asset): run `airflow db migrate` with that AIRFLOW_HOME, or set "
        "AIRFLOW_HOME to the home your Airflow uses")


def test_a_demo_service_that_is_down_says_which_target_starts_it(checkout, tmp_path):
    """Run from the demo's checkout, a broker that does not answer is one line naming
    `make services` (here a pipeline whose broker is a closed port)."""
    from devtools.services import free_port
    from tests.support.pipelines import kafka_pipeline
    port = free_port()
    cfg = kafka_pipeline(f"127.0.0.1:{port}", "t", name="down", folder=tmp_path,
                         output=tmp_path, mode="interval", schedule="@hourly",
                         start_date="2024-05-01T00:00:00Z")
    out = run(f"streamslice --dir {tmp_path} plan {cfg.name} --at 2024-05-01T01:30:00Z",
              checkout)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[-1].startswith(f"streamslice: cannot reach Kafka at "
                                                  f"127.0.0.1:{port}")
    assert out.stderr.splitlines()[-1].endswith("; the demo's services run under "
                                                "`make services`")
