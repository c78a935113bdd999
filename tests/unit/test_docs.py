"""The documentation as a user reads it (README.md, the front door, and the site's pages in
docs/): every pipeline example validates, every ``streamslice`` command parses, every file it
names exists, the Layout and Extending pages match the tree and the contracts, its example
reasons are what the decoder says, and the site builds strictly with every page in its
navigation. When one of these fails, the documentation or the code has drifted from the
other."""
import ast
import itertools
import json
import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.checks import present

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PAGES = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
EVERYTHING = {"README.md": README, **{f"docs/{name}": text for name, text in PAGES.items()}}
ALL_TEXT = "\n".join(EVERYTHING.values())
# A format block needs a source around it to make a pipeline file.
MODE = "mode: incremental\n"
SOURCE = "kafka: {bootstrap_servers: 'a:1', topics: [t]}\n"


def page(name):
    assert name in PAGES, f"docs/{name} is missing"
    return PAGES[name]


def section(name, title):
    """The text of docs/``name`` under ``## title`` up to the next ``## `` heading."""
    text = page(name)
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/{name} has no section {title!r}"
    return match.group(1)


def code_blocks(text, language=""):
    """The fenced blocks opened with ```` ```language ````, in order."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)  # fences in pairs
    return [b for lang, b in blocks if lang == language]


def yaml_examples():
    """Each YAML document of each ```yaml block of every page, with its file and line."""
    out = []
    for file, text in EVERYTHING.items():
        for m in re.finditer(r"```yaml\n(.*?)```", text, re.S):
            line = text[:m.start()].count("\n") + 2
            for doc in m.group(1).split("\n---\n"):
                out.append((file, line, doc))
                line += doc.count("\n") + 2
    return out


def as_pipeline(doc):
    """A block as a pipeline file: a mode and a source added where the example has none."""
    keys = set(re.findall(r"^(\w+):", doc, re.M))
    return ("" if "mode" in keys else MODE) + \
        ("" if keys & {"kafka", "kinesis", "files"} else SOURCE) + doc


def schema_files(folder):
    """The files the plain Avro and Protobuf examples name, relative to the pipeline file
    (schemas/trip.avsc, and trip.desc as ``protoc --include_imports -o`` writes it)."""
    from google.protobuf import descriptor_pb2
    (folder / "schemas").mkdir(parents=True, exist_ok=True)
    (folder / "schemas" / "trip.avsc").write_text(json.dumps(
        {"type": "record", "name": "Trip", "fields": [{"name": "id", "type": "long"}]}))
    trip = descriptor_pb2.DescriptorProto(name="Trip", field=[descriptor_pb2.FieldDescriptorProto(
        name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)])
    (folder / "schemas" / "trip.desc").write_bytes(descriptor_pb2.FileDescriptorSet(file=[
        descriptor_pb2.FileDescriptorProto(name="trip.proto", package="demo", syntax="proto3",
                                           message_type=[trip])]).SerializeToString())


def test_every_yaml_example_is_a_valid_pipeline_through_streamslice_validate(tmp_path, capsys):
    """Each example is written as a pipeline file (with a mode and a source around a block
    that has none) and checked by ``streamslice validate``, as a user would."""
    from streamslice.cli import main
    folder = tmp_path / "dags" / "pipelines"
    folder.mkdir(parents=True)
    schema_files(folder)
    examples = yaml_examples()
    for file, line, doc in examples:
        name = re.sub(r"\W", "_", file.removeprefix("docs/").removesuffix(".md"))
        (folder / f"{name}_line_{line}.yaml").write_text(as_pipeline(doc))
    assert main(["--dir", str(folder), "validate", "--json"]) == 0, capsys.readouterr().out
    result = json.loads(capsys.readouterr().out)
    assert result["errors"] == [] and len(result["valid"]) == len(examples) >= 20
    # every page about pipeline files shows some
    shown = {file for file, _, _ in examples}
    assert shown >= {f"docs/{p}" for p in ("getting-started.md", "pipelines.md", "sources.md",
                                            "formats.md", "outputs.md", "operations.md",
                                            "deployment.md", "aws.md")} | {"README.md"}


def test_the_pipeline_file_example_means_what_its_comments_say(tmp_path):
    """The pipeline reference's example file."""
    from streamslice.config import parse_pipeline
    from streamslice.formats.types import parse_schema
    from streamslice.kafka.source import KafkaSource
    from streamslice.kafka.subscriber import TopicList
    shown = [(f, d) for f, _, d in yaml_examples() if d.startswith("description:")]
    assert {f for f, _ in shown} == {"docs/pipelines.md"}
    text = shown[0][1]
    cfg = parse_pipeline(text, file=str(tmp_path / "dags" / "pipelines" / "taxi_trips.yaml"),
                         default_name="taxi_trips")
    assert (cfg.name, cfg.mode, cfg.schedule, cfg.allowed_lateness) == \
        ("taxi_trips", "interval", "@hourly", 600_000)
    assert isinstance(cfg.source, KafkaSource) and isinstance(cfg.source.subscriber, TopicList)
    assert (cfg.source.conn_id, cfg.source.subscriber.topics) == \
        ("streamslice_kafka", ("taxi-trips",))
    assert (cfg.decode.value.name, cfg.decode.key.name) == ("json", "string")
    assert parse_schema(cfg.decode.value.schema).names == \
        ["trip_id", "fare_amount", "event_time", "rider", "tags"]
    alerts = present(cfg.alerts)
    assert (alerts.lag_records, alerts.dead_letters) == (1_000_000, 1)
    assert cfg.output.path == str(tmp_path / "output")  # relative to the folder above dags/


def test_the_readme_copies_no_page():
    """The README is the repository's front door, index.md the site's: no paragraph or
    example of one is the other's (or the pipeline reference's) word for word."""
    def chunks(text):
        return {" ".join(c.split()) for c in re.split(r"\n\s*\n", text)
                if len(c.split()) >= 12}
    for name in ("index.md", "pipelines.md", "getting-started.md"):
        assert chunks(README) & chunks(page(name)) == set(), name


def test_the_inline_avro_schema_the_example_mentions_works_too():
    """``# or schema: {type: record, name: Trip, fields: […]}`` (a YAML mapping, not text)."""
    from streamslice.config import parse_pipeline
    assert "schema: {type: record, name: Trip, fields: [" in page("formats.md")
    cfg = parse_pipeline(MODE + SOURCE + "format:\n  value: avro\n  schema: {type: record, "
                         "name: Trip, fields: [{name: id, type: long}]}\n")
    assert cfg.decode.value.schema == "id BIGINT"


def commands():
    """Every ``streamslice …`` command line shown, in blocks or inline (a bare
    ``streamslice backfill`` names a command rather than running one)."""
    found = []
    for text in EVERYTHING.values():
        found += re.findall(r"^streamslice [^\n#]*", "\n".join(code_blocks(text)), re.M)
        found += re.findall(r"`(streamslice [a-z]+ [^`]*)`", text)
    return sorted({" ".join(c.split()) for c in found})


def test_every_streamslice_command_in_the_docs_parses():
    from streamslice.cli import parser
    lines = commands()
    assert {c.split()[1] for c in lines} >= {"offsets", "backfill", "efo", "plan", "validate"}
    for line in lines:
        words = [w for w in shlex.split(line.replace("…", "x")) if w != "\\"]
        try:
            args = parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"the docs' {line!r} does not parse")
        assert callable(args.run), line
    named = set(re.findall(r"`streamslice ([a-z]+)`", ALL_TEXT))
    assert named >= {"validate", "backfill"}
    choices = next(a for a in parser()._actions if a.dest == "command").choices
    assert named <= set(present(choices))


def test_json_works_on_every_command():
    """"``--json`` works on every command" (``demo`` only runs the demo)."""
    import argparse

    from streamslice.cli import parser
    assert "`--json` works on every command" in page("operations.md")

    def leaves(p, path=()):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, p
        for action in subs:
            for name, child in action.choices.items():
                yield from leaves(child, (*path, name))
    checked = [path for path, p in leaves(parser()) if path != ("demo",)]
    assert len(checked) >= 7
    for path, p in leaves(parser()):
        if path != ("demo",):
            assert "--json" in p._option_string_actions, path


def test_the_airflow_backfill_command_is_airflows():
    from airflow.cli.cli_parser import get_parser
    line = present(re.search(r"^airflow backfill create .*?(?=\n```)", page("operations.md"),
                             re.S | re.M)).group(0)
    args = get_parser().parse_args(shlex.split(line.replace("\\\n", " "))[1:])
    assert (args.dag_id, args.reprocess_behavior) == ("taxi_trips", "completed")


def test_the_getting_started_airflow_commands_are_airflows():
    """``airflow dags test DAG DATE`` as the page runs its interval: Airflow infers the hour
    00:00-01:00 from a date that is no interval's start, so the run holds no logical date a
    scheduled or backfill run needs (one dated 01:00 would hold the 01:00-02:00 run's)."""
    from airflow.cli.cli_parser import get_parser
    from airflow.timetables.interval import CronDataIntervalTimetable
    text = page("getting-started.md")
    line, = re.findall(r"^airflow dags test .*$", text, re.M)
    args = get_parser().parse_args(shlex.split(line)[1:])
    assert args.dag_id == "orders"
    inferred = CronDataIntervalTimetable("0 * * * *", timezone="UTC") \
        .infer_manual_data_interval(run_after=args.logical_date)
    assert (inferred.start, inferred.end) == (datetime(2024, 5, 1, 0, tzinfo=timezone.utc),
                                              datetime(2024, 5, 1, 1, tzinfo=timezone.utc))
    assert args.logical_date not in (inferred.start, inferred.end)
    backfill = re.search(r"^streamslice backfill orders --from (\S+) --to (\S+) --unpause$",
                         text, re.M)
    assert backfill and backfill.group(1) == "2024-05-01T01:00:00Z"


def test_every_file_the_docs_name_exists():
    """Paths such as ``tests/unit/test_avro_codec.py`` or ``bench/read_cpu.py``, and test
    modules named alone (``test_avro_registry.py``)."""
    paths = set(re.findall(r"(?<![\w/.])((?:tests|bench|devtools|plugins|dags|jobs|docs)"
                           r"/[\w./-]*\w)(?![\w.]*:\d)", ALL_TEXT))  # not file:line in a message
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == []
    names = set(re.findall(r"\b(test_\w+\.py)\b", ALL_TEXT))
    test_files = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert names - test_files == set()


def test_the_layout_names_every_module_and_each_module_it_names_exists():
    layout = section("development.md", "Layout")
    words = set(re.findall(r"[\w]+", layout))
    package = ROOT / "plugins" / "streamslice"
    modules = [p for p in package.rglob("*.py") if p.name != "__init__.py"]
    assert [str(p.relative_to(package)) for p in modules if p.stem not in words] == []
    folders = [p.name for p in package.iterdir() if (p / "__init__.py").exists()]
    assert [f for f in folders if f"{f}/" not in layout] == []
    for name in set(re.findall(r"\b([\w]+\.(?:py|js|css))\b", layout)):
        assert any(list((ROOT / top).glob(f"**/{name}"))
                   for top in ("plugins", "dags", "jobs", "tests", "bench", "devtools")), name


def test_extending_names_the_source_contract_and_the_contract_has_what_it_names():
    from streamslice import formats, sources, splits
    from streamslice.commit import publishers
    from streamslice.planning import plan
    from streamslice.reading.loop import SplitReader
    text = page("extending.md")
    named = set(re.findall(r"`([a-z_]+)`", text))

    def api(role):
        return {n for n in dir(role) if not n.startswith("_")} | set(role.__annotations__)
    roles = (sources.Source, sources.Planner, sources.ReaderFactory, sources.SplitSerializer,
             sources.Connected, sources.HasLifecycleTasks, sources.HasPageSections,
             sources.HasCliCommands, sources.CommitListener)
    contract = set().union(*(api(role) for role in roles))
    # Every role and capability is on the page, and each of their members (describe_* as
    # ``describe*``) …
    assert [r.__name__ for r in roles if not re.search(rf"`(sources\.)?{r.__name__}`", text)] == []
    undocumented = sorted(n for n in contract - named
                          if not (n.startswith("describe") and "`describe*`" in text))
    assert undocumented == []
    # … and every name it lists for a source exists on one of them.
    hooks = text[text.index("implements `sources.Source`"):text.index("Register it in")]
    listed = set(re.findall(r"`([a-z_]+)`", hooks)) - {"shard"}
    assert sorted(n for n in listed if n not in contract and not hasattr(SplitReader, n)) == []
    split_api = set(splits.Split.__annotations__) | set(dir(splits.Split))
    split_text = text[text.index("`splits.Split` contract"):text.index("implements")]
    assert set(re.findall(r"`([a-z_]+)`", split_text)) <= split_api
    for name in ("publish", "published_manifest", "lineage_dataset"):
        assert f"`{name}`" in text and hasattr(publishers.Publisher, name)
    for name in ("parse", "from_options", "prepare", "fields", "decode"):
        assert f"`{name}`" in text and hasattr(formats.Format, name)
    assert "PUBLISHERS" in text and publishers.PUBLISHERS
    assert "MIGRATIONS" in text and "PLAN_VERSION" in text and plan.MIGRATIONS
    assert all(hasattr(m, n) for m, n in ((sources, "position_text"), (sources, "PageAction"),
                                          (sources, "SourcePlan"), (splits, "PositionText"),
                                          (sources, "CommandKit")))


def test_the_docs_json_dead_letter_reasons_are_what_the_decoder_says():
    """The reasons the formats page lists, each made by a record under the page's own example
    schema (the first ``value: json`` block of *Record formats and types*)."""
    from streamslice.formats import FormatSpec
    from streamslice.formats.json import Json
    text = section("formats.md", "Record formats and types")
    ddl = present(re.search(r"schema: >-\n(.*?)\n  on_error", text, re.S)).group(1)
    listed = present(re.search(r"names the field's path.*?```\n(.*?)```", text, re.S)).group(1)
    records = {
        b'{"order_id": 1, "customer": {"tags": ["a", "b", "c", 7]}}',
        b'{"order_id": 1, "amount": 123.456}',
        b'{"order_id": 1, "attributes": {"channel": 1}}',
        b'{"customer": {"id": 2}}',
        b'{"order_id": 123 4}',
        b'{"order_id": 1, "attributes": "\xe9"}',
        b'{"order_id": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b"[1, 2]",
    }
    _, errors = Json(FormatSpec("json", " ".join(ddl.split()))).decode(sorted(records))
    assert sorted(errors.values()) == sorted(listed.strip().splitlines())


def test_the_reference_table_lists_every_registered_format():
    from streamslice.formats import formats_for
    for role in ("value", "key"):
        row = present(re.search(rf"^\| `format\.{role}` \|.*$", page("pipelines.md"),
                                re.M)).group(0)
        meaning = row.split(" | ")[2]
        assert set(re.findall(r"`(\w+)`", meaning)) >= set(formats_for(role)), role


def test_the_outputs_page_names_every_output_format():
    from streamslice.commit import publishers
    text = page("outputs.md")
    for fmt in publishers.PUBLISHERS:
        assert re.search(rf"\b{fmt}\b", text, re.I), fmt


def test_the_manifest_holds_what_the_outputs_page_says(tmp_path):
    from streamslice.commit.protocol import publish_once
    from tests.unit.test_commit import GOOD_ROWS, good_summaries, make_plan, stage
    text = section("outputs.md", "Parquet datasets")
    said = text[text.index("`_manifest.json` names"):text.index("Work areas")]
    said = set(re.findall(r"`([a-z_]+)`", said)) - {"on_data_loss", "skip"}
    assert len(said) >= 12
    plan = make_plan(dataset=str(tmp_path / "ds"))
    manifest = publish_once(plan, stage(tmp_path, GOOD_ROWS, good_summaries(plan)),
                            run_id="r1", now_ms=1)
    written = json.loads((tmp_path / "ds" / "batch=00000001" / "_manifest.json").read_text())
    assert said - set(written) == set()
    assert written["plan_id"] == manifest.plan_id and written["splits"]


def test_make_bench_runs_what_the_docs_say_and_every_benchmark_is_described():
    makefile = (ROOT / "Makefile").read_text()
    target = present(re.search(r"^bench:.*?\n((?:\t.*\n)+)", makefile, re.M)).group(1)
    run = set(re.findall(r"(bench/\w+\.py)", target))
    perf = page("performance.md")
    text = perf[perf.index("`make bench` runs"):] + "\n\n"
    text = text[:text.index("\n\n")]
    alone = text[text.index("(figures"):text.index("run on their own")]
    said = set(re.findall(r"`(bench/\w+\.py)", text))
    assert said - set(re.findall(r"`(bench/\w+\.py)", alone)) == run
    scripts = {f"bench/{p.name}" for p in (ROOT / "bench").glob("*.py")
               if p.stem not in ("__init__", "children")}
    assert scripts <= set(re.findall(r"(bench/\w+\.py)", ALL_TEXT))


def test_the_compose_deployment_is_what_the_docs_say():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    text = section("deployment.md", "`docker-compose.yml`")
    env = compose["services"]["airflow-scheduler"]["environment"]
    preset = {k.removeprefix("AIRFLOW_CONN_").lower() for k in env if k.startswith("AIRFLOW_CONN_")}
    assert set(re.findall(r"`(streamslice_\w+)`", text)) == preset
    assert "schema-registry" in compose["services"] and "schema registry" in text.lower()
    image = compose["services"]["schema-registry"]["image"]
    assert image.startswith("confluentinc/cp-schema-registry:")
    assert f"`{image.split(':')[0]}`" in text
    assert "CeleryExecutor" in compose["services"]["airflow-worker"]["environment"].values()
    assert "Celery layout" in text and "`airflow-worker`" in text
    assert "http://localhost:8080 (admin/admin)" in " ".join(text.split())
    assert "8080:8080" in compose["services"]["airflow-apiserver"]["ports"]
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].startswith("admin:")
    init = " ".join(compose["services"]["airflow-init"]["command"])
    assert """'{"admin": "admin"}' > /opt/airflow/passwords.json""" in init


def test_every_python_example_is_python():
    """A Python block that does not even parse cannot be run by a reader."""
    blocks = [(f, b) for f, text in EVERYTHING.items() for b in code_blocks(text, "python")]
    assert len(blocks) >= 6
    for file, block in blocks:
        try:
            ast.parse(block)
        except SyntaxError as e:
            pytest.fail(f"{file}: a python block does not parse: {e}\n{block}")


def test_getting_started_puts_the_dag_factory_file_in_the_dags_folder():
    """The DAGs folder's one file, as the page shows it, is what ``streamslice init`` writes
    and the repository's own."""
    from streamslice.cli.scaffold import DAG_FILE, DAG_TEXT
    text = page("getting-started.md")
    shown = [b for b in code_blocks(text, "python") if "build_dags" in b]
    assert shown == [DAG_TEXT] == [(ROOT / "dags" / "streamslice_pipelines.py").read_text()]
    assert f"`{DAG_FILE}`" in text


# The site: a MkDocs build in strict mode (what `make test` runs first), every page in its
# navigation, and the README a short front door that links every page.

def nav_pages():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    out = []

    def walk(entries):
        for entry in entries:
            for value in (entry.values() if isinstance(entry, dict) else [entry]):
                walk(value) if isinstance(value, list) else out.append(value)
    walk(config["nav"])
    return config, out


def test_every_page_is_in_the_navigation_once_and_every_entry_is_a_page():
    config, pages = nav_pages()
    assert config["strict"] is True and config["docs_dir"] == "docs"
    assert config["theme"]["name"] == "material"
    assert sorted(pages) == sorted(PAGES) and len(pages) == len(set(pages))
    # the topics issue #29 asks for, each a page
    assert set(PAGES) >= {"index.md", "getting-started.md", "pipelines.md", "sources.md",
                          "formats.md", "outputs.md", "exactly-once.md", "operations.md",
                          "streamslice-page.md", "deployment.md", "aws.md", "spark.md",
                          "performance.md", "extending.md", "development.md"}
    # links that leave the pages would not be checked by the build: none but the web's
    assert all(name.endswith(".md") for name in PAGES)


def test_validation_turns_every_broken_link_into_a_warning_that_strict_fails():
    config, _ = nav_pages()
    assert {k: config["validation"][k] for k in ("not_found", "anchors", "omitted_files",
                                                 "unrecognized_links")} == \
        dict.fromkeys(("not_found", "anchors", "omitted_files", "unrecognized_links"), "warn")


def mkdocs_build(config_file, site):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config_file), "--site-dir", str(site)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})


def test_the_site_builds_strictly_and_a_broken_link_or_anchor_fails_it(tmp_path):
    built = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "getting-started" / "index.html").exists()
    assert (tmp_path / "site" / "images" / "streamslice-page.png").exists()
    # The same site with one broken link, then one missing anchor: the build fails naming it.
    for broken, said in (("[x](no-such-page.md)", "no-such-page.md"),
                         ("[x](pipelines.md#no-such-field)", "no-such-field")):
        copy = tmp_path / f"docs-{said}"
        copy.mkdir()
        for name, text in PAGES.items():
            (copy / name).write_text(text + (f"\n{broken}\n" if name == "index.md" else ""))
        shutil.copytree(ROOT / "docs" / "images", copy / "images")
        config = tmp_path / f"mkdocs-{said}.yml"
        config.write_text((ROOT / "mkdocs.yml").read_text()
                          .replace("docs_dir: docs", f"docs_dir: {copy}"))
        failed = mkdocs_build(config, tmp_path / f"site-{said}")
        assert failed.returncode != 0 and said in failed.stderr, failed.stderr


def test_make_test_builds_the_site_strictly_and_make_docs_serves_it():
    makefile = (ROOT / "Makefile").read_text()
    test_deps = present(re.search(r"^test:(.*)$", makefile, re.M)).group(1).split()
    assert "docs-build" in test_deps
    build = present(re.search(r"^docs-build:.*?\n((?:\t.*\n)+)", makefile, re.M)).group(1)
    assert "mkdocs build --strict" in build
    # --quiet hides the warnings that --strict counts: the build would pass with broken links
    assert "--quiet" not in build
    serve = present(re.search(r"^docs:.*?\n((?:\t.*\n)+)", makefile, re.M)).group(1)
    assert "mkdocs serve" in serve
    # what the build needs is installed by `make venv`
    pins = (ROOT / "requirements.txt").read_text() + (ROOT / "constraints.txt").read_text()
    assert re.search(r"^mkdocs==", pins, re.M) and re.search(r"^mkdocs-material==", pins, re.M)


def test_the_readme_is_a_short_front_door_that_links_every_page():
    lines = README.splitlines()
    assert len(lines) <= 200
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)(?:#[\w-]+)?\)", README))
    assert linked >= set(PAGES) - {"index.md"}
    assert "make demo" in README and "make test" in README
    assert "## What `make demo` shows" in README


def slug(heading):
    """The anchor MkDocs' toc gives a heading (its default slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[-\s]+", "-", text).strip("-")


def test_the_readmes_links_into_the_docs_reach_their_headings():
    """The README is not part of the site, so its links are checked here, not by the build."""
    links = re.findall(r"\]\(docs/([\w-]+\.(?:md|png))(?:#([\w-]+))?\)", README)
    assert len(links) >= 14
    for name, anchor in links:
        assert (ROOT / "docs" / name).exists(), name
        if anchor:
            headings = re.findall(r"^#+ (.*)$", page(name), re.M)
            assert anchor in {slug(h) for h in headings}, (name, anchor)


def test_the_extending_pages_record_format_works_once_registered(monkeypatch, tmp_path):
    """The page's ``Long`` format, registered as the page says, runs through the same
    contract checks as the built-in formats, parses in a pipeline file and decodes keys."""
    import types

    from streamslice import formats
    from streamslice.config import parse_pipeline
    from tests.unit.test_formats_contract import test_every_format_keeps_the_contract
    text = page("extending.md")
    example, = [b for b in code_blocks(text, "python") if "class Long(BaseFormat)" in b]
    line = re.search(r'`("long": "streamslice\.formats\.long:Long")` in `FORMATS`', text)
    assert line
    module = types.ModuleType("streamslice.formats.long")
    exec(compile(example, "docs/extending.md", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "streamslice.formats.long", module)
    monkeypatch.setitem(formats.FORMATS, "long", "streamslice.formats.long:Long")
    for role in ("value", "key"):
        test_every_format_keeps_the_contract("long", role)
    cfg = parse_pipeline(MODE + SOURCE + "format: {key: long}\n")
    fmt = formats.make_format(cfg.decode.key, "key")
    arrays, errors = fmt.decode([(42).to_bytes(8, "big"), (-1).to_bytes(8, "big", signed=True),
                                 None, b"\x01"])
    assert arrays[0].to_pylist() == [42, -1, None, None]
    assert errors == {3: "key: expected 8 bytes, got 1"}
    from streamslice.spark.plan_options import decoding_from_options
    assert decoding_from_options({"keyformat": "long"}).key.name == "long"


def test_the_performance_pages_commands_use_each_scripts_own_options():
    """Each ``bench/…py --option`` line is checked against the options the script (or the
    shared ``bench/children.py`` parser it uses) declares, and every script has a line."""
    text = page("performance.md")
    lines = re.findall(r"^\.venv/bin/python (bench/\w+\.py)([^#\n]*)", text, re.M)
    scripts = {f"bench/{p.name}" for p in (ROOT / "bench").glob("*.py")
               if p.stem not in ("__init__", "children")}
    assert {script for script, _ in lines} | set(
        re.findall(r"(bench/\w+\.py)", (ROOT / "Makefile").read_text())) >= scripts
    for script, args in lines:
        source = (ROOT / script).read_text()
        if "bench.children import" in source:
            source += (ROOT / "bench" / "children.py").read_text()
        declared = set(re.findall(r'add_argument\(\s*"(--[\w-]+)"', source))
        assert set(re.findall(r"(--[\w-]+)", args)) <= declared, script


def test_the_home_pages_words_name_real_contracts():
    """The vocabulary table's code names (``module.Name`` or ``Class.method``) exist."""
    import importlib
    rows = re.findall(r"^\| \w+ \(`([\w.]+)`\) \|", page("index.md"), re.M)
    assert len(rows) == 5
    for dotted in rows:
        parts = dotted.split(".")
        module = importlib.import_module("streamslice." + ".".join(parts[:-1]))
        assert isinstance(getattr(module, parts[-1]), type), dotted


def test_the_extras_the_docs_name_are_the_packages_and_getting_started_installs_the_tested():
    """Getting started's list and Deployment's table name the pyproject's extras, every one
    of them in the table; the page's pip line installs the extras the wheel test installs."""
    import tomllib

    from tests.integration.test_wheel import EXTRAS
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["project"]["optional-dependencies"])
    text = page("getting-started.md")
    listed = text[text.index("## 1. Install"):text.index("## 2.")]
    named = set(re.findall(r"`([a-z-]+)`", listed[:listed.index("```")]))
    assert named and named <= extras
    pip, = re.findall(r"^pip install '\S+\[([\w,-]+)\]' -c constraints\.txt$", text, re.M)
    assert pip == EXTRAS
    table = section("install.md", "The extras")
    rows = {x for row in re.findall(r"^\| `([^|]+)` \|", table, re.M)
            for x in re.findall(r"[a-z-]+", row)}
    assert rows == extras


def test_the_install_pages_missing_extra_error_is_the_one_a_user_gets(monkeypatch):
    """Word for word, and the wheel it names is the one ``python -m build`` makes."""
    from streamslice import __version__
    from streamslice.config import extras
    monkeypatch.setattr(extras, "missing_modules", lambda extra: ["fastavro"])
    said = " ".join(section("install.md", "The extras").split())
    assert present(extras.missing_message("avro", "format.value: value: avro")) in said
    assert f"dist/streamslice-{__version__}-py3-none-any.whl[kafka,spark]" in page("install.md")
    # no page tells anyone to install the package by name from an index
    assert [f for f, text in EVERYTHING.items()
            if re.search(r"pip install ['\"]?streamslice\[(?![^\]]*\] @ )", text)] == []


def test_every_page_shows_an_example_and_the_page_about_the_ui_its_pictures():
    """Issue #29: pages "each short and with examples"; the UI page's examples are real
    screenshots, each a file of the site."""
    bare = [name for name, text in PAGES.items() if name != "streamslice-page.md"
            and not re.search(r"^```\w*\n.*?^```$", text, re.S | re.M)]
    assert bare == []
    pictures = re.findall(r"!\[[^\]]+\]\(([\w./-]+\.png)\)", page("streamslice-page.md"))
    assert len(pictures) >= 3 and all((ROOT / "docs" / p).exists() for p in pictures)


def test_every_picture_the_docs_show_exists_and_operations_shows_each_failure():
    """Issue #30: the page in each failure state (screenshots from tests/integration/
    test_ui_live.py) is on the operations page, and no page shows a picture that is not there."""
    for file, text in EVERYTHING.items():
        base = ROOT if file == "README.md" else ROOT / "docs"
        for path in re.findall(r"!\[[^\]]+\]\(([\w./-]+\.png)\)", text):
            assert (base / path).exists(), f"{file}: {path} is missing"
    shown = re.findall(r"!\[[^\]]+\]\(images/([\w.-]+)\.png\)",
                       section("operations.md", "What the page says when something is wrong"))
    assert shown == ["streamslice-failed-setup", "streamslice-backfill-conflict",
                     "streamslice-stale", "streamslice-scheduler-stopped"]


# The references: generated from the code, or checked against it name by name.

def test_the_cli_reference_is_what_the_parser_makes():
    """docs/cli.md is generated (``python -m devtools.cli_reference``): a flag, default or
    help text changed in the parser and not in the page fails here."""
    from devtools.cli_reference import render
    assert page("cli.md") == render(), "run: python -m devtools.cli_reference"
    # every command and flag the parser has is on it, so every one on it exists
    from streamslice.cli import leaf_parsers, parser
    flags = {o for p in leaf_parsers(parser()) for a in p._actions for o in a.option_strings
             if o.startswith("--")}
    assert flags - {"--help"} <= set(re.findall(r"`(--[\w-]+)`", page("cli.md")))


def environment_reads():
    """Every variable the package, the DAG file and the jobs read by name (not those they
    only set for Spark's processes)."""
    found = set()
    for top in ("plugins", "dags", "jobs"):
        for path in (ROOT / top).rglob("*.py"):
            text = path.read_text()
            # os.environ, or a mapping of it under a name of its own (env, environ)
            found |= set(re.findall(r"(?:\b\w*env\w*\.get|getenv)\(\s*\"([A-Z][A-Z0-9_]+)\"",
                                    text))
            found |= set(re.findall(r"\b\w*env\w*\[\"([A-Z][A-Z0-9_]+)\"\]", text))
            found |= set(re.findall(r"\"([A-Z][A-Z0-9_]+)\" (?:not )?in os\.environ", text))
    return found


def test_every_environment_variable_the_code_reads_is_documented():
    text = page("environment.md")
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", text, re.M))
    read = environment_reads()
    assert {"STREAMSLICE_HOME", "STREAMSLICE_PIPELINES", "SPARK_REMOTE"} <= read
    # (a variable read only as Spark sets it is named below the table)
    undocumented = sorted(v for v in read - rows if f"`{v}`" not in text)
    assert undocumented == []
    # and every streamslice variable the table lists is one the code reads
    assert sorted(v for v in rows if v.startswith("STREAMSLICE_") and v not in read) == []


def test_the_alert_payload_page_is_the_alert_record():
    """Fields, kinds, each kind's details and the error kinds, as the code makes them; the
    example payload reads back as an Alert."""
    import dataclasses

    from streamslice import errors
    from streamslice.monitoring import alerts
    text = page("alerts.md")
    example = json.loads(code_blocks(text, "json")[0])
    assert alerts.Alert.from_dict(example).kind == "run_failed"
    table = section("alerts.md", "Fields")
    assert set(re.findall(r"^\| `(\w+)` \|", table, re.M)) == \
        {f.name for f in dataclasses.fields(alerts.Alert)}
    kinds = section("alerts.md", "Kinds")
    rows = re.findall(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", kinds, re.M)
    assert {kind for kind, _ in rows} == set(alerts.KINDS)
    code = "".join((ROOT / "plugins/streamslice" / f).read_text() for f in (
        "monitoring/alerts.py", "airflow/alerting.py", "airflow/deadline.py",
        "airflow/freshness.py"))
    named = {key for _, cell in rows for key in re.findall(r"`(\w+)`", cell)
             if not key.startswith(("on_", "alerts"))} - {"run_failed", "key", "from", "to",
                                                           "reason"}
    assert sorted(k for k in named if f'"{k}"' not in code) == []
    said = set(re.findall(r"`(\w+)`", kinds[kinds.index("`error_kind` is"):]))
    ours = {c.kind for c in vars(errors).values() if isinstance(c, type)
            and issubclass(c, errors.StreamsliceError)} - {"error", "injected_fault"}
    assert ours <= said


def test_the_upgrading_page_lists_every_record_and_its_versions():
    import importlib

    from streamslice.planning import plan
    from streamslice.records import RecordKind, Versioned
    # every module that defines a record kind, whatever other tests imported before
    package = ROOT / "plugins" / "streamslice"
    for path in package.rglob("*.py"):
        if "KIND: ClassVar[RecordKind]" in path.read_text():
            module = ".".join(path.relative_to(package).with_suffix("").parts)
            importlib.import_module(f"streamslice.{module}")

    def records(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from records(sub)
    kinds = [c.KIND for c in records(Versioned) if isinstance(c.__dict__.get("KIND"),
                                                                RecordKind)
             and c.__module__.startswith("streamslice.")]  # not a test's own record
    kinds.append(RecordKind("plan", plan.PLAN_VERSION, plan.MIGRATIONS))
    rows = {name: (int(writes), reads) for name, writes, reads in re.findall(
        r"^\| ([a-z -]+) \| [^|]+ \| (\d+) \| ([\d to]+) \|$", page("upgrading.md"), re.M)}
    assert rows == {k.name: (k.version, k.readable()) for k in kinds}


# Every reference table: each field it names is one the parser takes, and each default it
# shows is the parser's (a file setting the field to the shown default parses to the same
# pipeline as a file leaving it out).

INTERVAL = {"mode": "interval", "schedule": "@hourly", "start_date": "2024-05-01T00:00:00Z"}
# each source's pipeline settings, or a list of them when a field is checked against several
BASES: dict[str, dict[str, Any] | list[dict[str, Any]]] = {
    "kafka": {"kafka": {"bootstrap_servers": "a:1", "topics": ["t"]}},
    "kinesis": {"kinesis": {"stream": "s", "region": "eu-west-1"}},
    "files": {"files": {"path": "/data/in"}},
    "iceberg": {"kafka": {"bootstrap_servers": "a:1", "topics": ["t"]},
                "output": {"path": "/lake", "format": "iceberg"}},
    "delta": {"kafka": {"bootstrap_servers": "a:1", "topics": ["t"]},
              "output": {"path": "/lake", "format": "delta"}},
    "registry": [{"kafka": {"bootstrap_servers": "a:1", "topics": ["t"]},
                  "format": {"value": "avro", "registry": {"url": "http://registry:8081"},
                             "subject": "t-value"}},
                 {"kafka": {"bootstrap_servers": "a:1", "topics": ["t"]},
                  "format": {"value": "protobuf", "key": "avro", "subject": "t-value",
                             "key_subject": "t-key",
                             "registry": {"url": "http://registry:8081"}}}],
    "event_time": {**INTERVAL, "kafka": {"bootstrap_servers": "a:1", "topics": ["t"]},
                   "format": {"value": "json", "schema": "at TIMESTAMP, n BIGINT"},
                   "event_time": {"field": "at"}},
}
REFERENCE_TABLES = [  # (page, section, where its fields go, the source around them)
    ("pipelines.md", "Common fields", (), "kafka"),
    ("kafka.md", "Options", ("kafka",), "kafka"),
    ("kinesis.md", "Options", ("kinesis",), "kinesis"),
    ("files.md", "Options", ("files",), "files"),
    ("outputs.md", "Output fields", (), "kafka"),
    ("iceberg.md", "Options", (), "iceberg"),
    ("delta.md", "Options", (), "delta"),
    ("formats.md", "Avro, Protobuf and JSON Schema, with schema registries", (), "registry"),
    ("exactly-once.md", "Event time from a field", (), "event_time"),
    ("operations.md", "Alerts", ("alerts",), "kafka"),
]


def reference_rows(text):
    """(field names, shown defaults) of each row of a ``field | default | meaning`` table,
    defaults only where the cell is code spans alone (one per field), else None."""
    out = []
    for first, default in re.findall(r"^\| (`[^|]*) \| ([^|]*) \|", text, re.M):
        if ":" in first or "<" in first:
            continue  # a value's row (`output.format: iceberg`) or a family (`retries.<api>…`)
        names = re.findall(r"`([\w.]+)`", first.split("(")[0])
        parent = names[0].rpartition(".")[0] if names else ""  # `output.path`, `format`
        names = [n if "." in n or not parent else f"{parent}.{n}" for n in names]
        shown = re.findall(r"`([^`]+)`", default.split("(")[0])
        plain = re.sub(r"`[^`]+`|[,\s]", "", default.split("(")[0])
        exact = len(shown) == len(names) and not plain and not any("<" in v for v in shown)
        out.append((names, shown if exact else None))
    return out


def yaml_value(text):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # `*`: a string as YAML cannot write it bare


def with_field(data, path, value):
    data = json.loads(json.dumps(data))
    *parents, last = path
    node = data
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return data


def parses(data):
    from streamslice.config import parse_pipeline
    return parse_pipeline(yaml.safe_dump(data), file="/p/dags/pipelines/x.yaml",
                          default_name="x")


def test_every_reference_tables_fields_and_defaults_are_the_parsers(monkeypatch):
    from streamslice.errors import ConfigError
    for name in ("STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_MASTER", "SPARK_REMOTE",
                 "STREAMSLICE_HOME", "STREAMSLICE_ICEBERG_CATALOG_URI"):
        monkeypatch.delenv(name, raising=False)
    checked, problems = 0, []
    for file, title, block, source in REFERENCE_TABLES:
        rows = reference_rows(section(file, title))
        assert rows, (file, title)
        for names, shown in rows:
            for i, field in enumerate(names):
                path = (*block, *field.split("."))
                value = yaml_value(shown[i]) if shown else "%%nonsense%%"
                verdicts = []
                json_value = {"format": {"value": "json", "schema": "id BIGINT"}}
                modes: list[dict[str, Any]] = [{"mode": "incremental"}, INTERVAL,
                                               {"mode": "incremental", **json_value}]
                bases = BASES[source]
                sources = bases if isinstance(bases, list) else [bases]
                for mode, around in itertools.product(modes, sources):
                    base = {**mode, **around}
                    try:
                        same = parses(with_field(base, path, value)) == parses(base)
                    except ConfigError as exc:
                        verdicts.append(f"refused: {exc}")
                        continue
                    verdicts.append("same" if same else "differs")
                unknown = [v for v in verdicts if f"unknown key {path[-1]!r}" in v]
                if len(unknown) == len(verdicts):
                    problems.append(f"{file} {title}: {field} is no field: {unknown[0]}")
                elif shown and "same" not in verdicts:
                    problems.append(f"{file} {title}: {field}: default {shown[i]!r} is not "
                                    f"the parser's ({verdicts})")
                checked += 1
    assert problems == [], "\n".join(problems)
    assert checked >= 60


def test_the_spark_page_names_every_decoding_option_and_what_happens_to_java_properties():
    from streamslice.formats import formats_for
    from streamslice.kafka.spark_options import JAVA_TO_LIBRDKAFKA, REFUSED
    from streamslice.spark.plan_options import DECODING
    text = page("spark.md")
    listed = present(re.search(r"`valueFormat` \(([^)]*)\)", " ".join(text.split()))).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(formats_for("value"))
    assert [o for o in DECODING if f"`{o}`" not in text] == []
    kafka_row = present(re.search(r"^\| `kafka\.\*` \|.*$", text, re.M)).group(0)
    dropped = [k for k, v in JAVA_TO_LIBRDKAFKA.items() if v is None]
    assert [n for n in (*dropped, *REFUSED) if f"`{n}`" not in kafka_row] == []
    assert "register(spark)" in text and "4.3" in text


def test_every_picture_is_in_docs_images_and_shown():
    """One folder of pictures, none of them left unshown."""
    assert sorted(p.name for p in (ROOT / "docs").glob("*.png")) == []
    shown = set(re.findall(r"\]\((?:docs/)?images/([\w.-]+\.png)\)", ALL_TEXT))
    assert sorted(p.name for p in (ROOT / "docs" / "images").iterdir()) == sorted(shown)


def test_user_pages_leave_how_it_is_tested_to_one_page():
    """Test files and harness are for the development pages; a user page links there."""
    developers = {"development.md", "testing.md", "extending.md", "performance.md"}
    cited = {name: re.findall(r"tests/[\w/]+\.py|\btest_\w+\.py|\bTested\b", text)
             for name, text in PAGES.items() if name not in developers}
    assert {name: found for name, found in cited.items() if found} == {}
    assert "testing.md" in nav_pages()[1]
