"""The README as a user reads it: every pipeline example validates, every ``streamslice``
command parses, every file it names exists, its Layout and Extending sections match the tree
and the contracts, and its example reasons are what the decoder says. When one of these
fails, the README or the code has drifted from the other."""
import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# A format block needs a source around it to make a pipeline file.
SOURCE = "mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"


def section(title):
    """The text under ``## title`` up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def code_blocks(language=""):
    """The README's fenced blocks opened with ```` ```language ````, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README, re.S | re.M)


def yaml_examples():
    """Each YAML document of each ```yaml block, with the README line it starts on."""
    out = []
    for m in re.finditer(r"```yaml\n(.*?)```", README, re.S):
        line = README[:m.start()].count("\n") + 2
        for doc in m.group(1).split("\n---\n"):
            out.append((line, doc))
            line += doc.count("\n") + 2
    return out


def schema_files(folder):
    """The files the README's plain Avro and Protobuf examples name, relative to the pipeline
    file (schemas/trip.avsc, and trip.desc as ``protoc --include_imports -o`` writes it)."""
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
    """Each example is written as a pipeline file (a format: block with a source around it) and
    checked by ``streamslice validate``, as a user would."""
    from streamslice.cli import main
    folder = tmp_path / "dags" / "pipelines"
    folder.mkdir(parents=True)
    schema_files(folder)
    examples = yaml_examples()
    for line, doc in examples:
        text = doc if doc.lstrip().startswith(("description:", "mode:")) else SOURCE + doc
        (folder / f"readme_line_{line}.yaml").write_text(text)
    assert main(["--dir", str(folder), "validate", "--json"]) == 0, capsys.readouterr().out
    result = json.loads(capsys.readouterr().out)
    assert result["errors"] == [] and len(result["valid"]) == len(examples) >= 7


def test_the_pipeline_file_example_means_what_its_comments_say(tmp_path):
    from streamslice.config import parse_pipeline
    from streamslice.formats.types import parse_schema
    (first_line, text), = [(n, d) for n, d in yaml_examples() if d.startswith("description:")]
    cfg = parse_pipeline(text, file=str(tmp_path / "dags" / "pipelines" / "taxi_trips.yaml"),
                         default_name="taxi_trips")
    assert (cfg.name, cfg.mode, cfg.schedule, cfg.allowed_lateness) == \
        ("taxi_trips", "interval", "@hourly", 600_000)
    assert (cfg.source.conn_id, cfg.source.subscriber.topics) == \
        ("streamslice_kafka", ("taxi-trips",))
    assert (cfg.decode.value.name, cfg.decode.key.name) == ("json", "string")
    assert parse_schema(cfg.decode.value.schema).names == \
        ["trip_id", "fare_amount", "event_time", "rider", "tags"]
    assert (cfg.alerts.lag_records, cfg.alerts.dead_letters) == (1_000_000, 1)
    assert cfg.output.path == str(tmp_path / "output")  # relative to the project root
    assert first_line > 0


def test_the_inline_avro_schema_the_example_mentions_works_too():
    """``# or schema: {type: record, name: Trip, fields: […]}`` (a YAML mapping, not text)."""
    from streamslice.config import parse_pipeline
    assert "schema: {type: record, name: Trip, fields: [" in README
    cfg = parse_pipeline(SOURCE + "format:\n  value: avro\n  schema: {type: record, name: Trip, "
                         "fields: [{name: id, type: long}]}\n")
    assert cfg.decode.value.schema == "id BIGINT"


def commands():
    """Every ``streamslice …`` command line the README shows, in blocks or inline (a bare
    ``streamslice backfill`` names a command rather than running one)."""
    blocks = "\n".join(code_blocks())
    found = re.findall(r"^streamslice [^\n#]*", blocks, re.M)
    found += re.findall(r"`(streamslice [a-z]+ [^`]*)`", README)
    return sorted({c.strip() for c in found})


def test_every_streamslice_command_in_the_readme_parses():
    from streamslice.cli import parser
    lines = commands()
    assert {c.split()[1] for c in lines} >= {"offsets", "backfill", "efo", "plan"}
    for line in lines:
        words = [w for w in shlex.split(line.replace("…", "x")) if w != "\\"]
        try:
            args = parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"the README's {line!r} does not parse")
        assert callable(args.run), line
    named = set(re.findall(r"`streamslice ([a-z]+)`", README))
    assert named >= {"validate", "backfill"}
    choices = next(a for a in parser()._actions if a.dest == "command").choices
    assert named <= set(choices)


def test_json_works_on_every_command():
    """"``--json`` works on every command" (``demo`` only runs the demo)."""
    import argparse

    from streamslice.cli import parser

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
    line = re.search(r"^airflow backfill create .*?(?=\n```)", README, re.S | re.M).group(0)
    args = get_parser().parse_args(shlex.split(line.replace("\\\n", " "))[1:])
    assert (args.dag_id, args.reprocess_behavior) == ("taxi_trips", "completed")


def test_every_file_the_readme_names_exists():
    """Paths such as ``tests/unit/test_avro_codec.py`` or ``bench/read_cpu.py``, and test
    modules named alone (``test_avro_registry.py``)."""
    paths = set(re.findall(r"(?<![\w/.])((?:tests|bench|devtools|plugins|dags|jobs|docs)"
                           r"/[\w./-]*\w)(?![\w.]*:\d)", README))  # not file:line in a message
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == []
    names = set(re.findall(r"\b(test_\w+\.py)\b", README))
    test_files = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    assert names - test_files == set()


def test_the_layout_names_every_module_and_each_module_it_names_exists():
    layout = section("Layout")
    words = set(re.findall(r"[\w]+", layout))
    package = ROOT / "plugins" / "streamslice"
    modules = [p for p in package.rglob("*.py") if p.name != "__init__.py"]
    assert [str(p.relative_to(package)) for p in modules if p.stem not in words] == []
    folders = [p.name for p in package.iterdir() if (p / "__init__.py").exists()]
    assert [f for f in folders if f"{f}/" not in layout] == []
    for name in set(re.findall(r"\b([\w]+\.(?:py|js|css))\b", layout)):
        assert any(list((ROOT / top).glob(f"**/{name}"))
                   for top in ("plugins", "dags", "jobs")), name


def test_extending_names_the_source_contract_and_the_contract_has_what_it_names():
    from streamslice import formats, sources, splits
    from streamslice.commit import publishers
    from streamslice.planning import plan
    from streamslice.reading.loop import SplitReader
    text = section("Extending")
    named = set(re.findall(r"`([a-z_]+)`", text))
    source_api = {n for n in dir(sources.Source) if not n.startswith("_")} | \
        set(sources.Source.__annotations__)
    # Every hook of the contract is in the README (describe_* as ``describe*``) …
    undocumented = sorted(n for n in source_api - named
                          if not (n.startswith("describe") and "`describe*`" in text))
    assert undocumented == []
    # … and every name it lists for a source exists on it.
    hooks = text[text.index("implements `sources.Source`"):text.index("Register it in")]
    listed = set(re.findall(r"`([a-z_]+)`", hooks)) - {"shard"}
    assert sorted(n for n in listed if n not in source_api and not hasattr(SplitReader, n)) == []
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
                                          (sources, "SourcePlan"), (splits, "PositionText")))


def test_the_readmes_json_dead_letter_reasons_are_what_the_decoder_says():
    """The reasons the README lists, each made by a record under the README's own example
    schema (the first ``value: json`` block of *Record formats and types*)."""
    from streamslice.formats import FormatSpec
    from streamslice.formats.json import Json
    text = section("Record formats and types")
    ddl = re.search(r"schema: >-\n(.*?)\n  on_error", text, re.S).group(1)
    listed = re.search(r"names the field's path.*?```\n(.*?)```", text, re.S).group(1)
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
        row = re.search(rf"^\| `format\.{role}` \|.*$", README, re.M).group(0)
        meaning = row.split(" | ")[2]
        assert set(re.findall(r"`(\w+)`", meaning)) >= set(formats_for(role)), role


def test_make_bench_runs_what_the_readme_says_and_every_benchmark_is_described():
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^bench:.*?\n((?:\t.*\n)+)", makefile, re.M).group(1)
    run = set(re.findall(r"(bench/\w+\.py)", target))
    text = README[README.index("`make bench` runs"):] + "\n\n"
    text = text[:text.index("\n\n")]
    alone = text[text.index("(figures"):text.index("run on their own")]
    said = set(re.findall(r"`(bench/\w+\.py)", text))
    assert said - set(re.findall(r"`(bench/\w+\.py)", alone)) == run
    scripts = {f"bench/{p.name}" for p in (ROOT / "bench").glob("*.py")
               if p.stem not in ("__init__", "children")}
    assert scripts <= set(re.findall(r"(bench/\w+\.py)", README))


def test_the_compose_deployment_is_what_the_readme_says():
    import yaml
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    text = section("Deployment")
    text = text[text.index("**`docker-compose.yml`**"):text.index("- **Spark Connect**")]
    env = compose["services"]["airflow-scheduler"]["environment"]
    preset = {k.removeprefix("AIRFLOW_CONN_").lower() for k in env if k.startswith("AIRFLOW_CONN_")}
    assert set(re.findall(r"`(streamslice_\w+)`", text)) == preset
    assert "schema-registry" in compose["services"] and "schema registry" in text
    assert "http://localhost:8080 (admin/admin)" in " ".join(text.split())
    assert "8080:8080" in compose["services"]["airflow-apiserver"]["ports"]
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].startswith("admin:")
    init = " ".join(compose["services"]["airflow-init"]["command"])
    assert """'{"admin": "admin"}' > /opt/airflow/passwords.json""" in init
