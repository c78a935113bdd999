"""The Iceberg and Delta publishers on local tables (real pyiceberg with a SQLite catalog, real
delta-rs): a retry after the commit finds it instead of committing again, a reprocessed
partition is replaced in one commit, a new nullable column evolves the table, an incompatible
one is refused. The read job is stood in for by Parquet files written here."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamslice.commit.protocol import publish_once
from streamslice.config import parse_pipeline
from streamslice.errors import CommitError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan
from streamslice.reading.staging import Staging
from streamslice.reading.stats import SplitSummary
from tests.support.checks import present
from tests.support.connections import connection


def target(tmp_path, fmt):
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output: {{path: '{tmp_path}', format: {fmt}}}\n", default_name="p")
    return cfg.output.target("p")


def make_plan(output, planned_at=0, schema=(("n", "long"),)):
    """``schema``: (name, type) pairs, as plans held them before formats had specs, or DDL."""
    decode = {"value": {"name": "json", "schema": schema}, "key": "raw"} \
        if isinstance(schema, str) else {"value": "json", "key": "raw",
                                          "schema": [list(f) for f in schema]}
    return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=planned_at,
                    splits=[KafkaSplit(0, "t", 0, 0, 3)], partition="batch=00000001", batch=1,
                    next_positions={"t:0": 3}, output=output,
                    decode={**decode, "on_error": "dead_letter"},
                    source_info={"include_headers": False})


def stage(tmp_path, plan, rows, name="s1", values=None):
    from streamslice.commit.publishers.tables import table_schema
    schema = table_schema(plan)
    st = Staging(str(tmp_path / "staging" / name))
    (tmp_path / "staging" / name / "data").mkdir(parents=True)
    cols: dict[str, list[object]] = {f.name: [None] * len(rows) for f in schema}
    cols.update(topic=["t"] * len(rows), partition=[0] * len(rows), offset=rows,
                streamslice_partition=[plan.partition] * len(rows))
    n_type = schema.field("n").type
    cols["n"] = pa.array([o * 10 for o in rows], n_type).to_pylist() if pa.types.is_integer(
        n_type) else [str(o) for o in rows]
    cols.update(values or {})
    pq.write_table(pa.table(cols, schema=schema), st.root + "/data/part-0.parquet")
    st.write_summary(0, SplitSummary(0, "t:0", 0, 3, records=len(rows), reached_stop=True))
    return st


def scan(output):
    if output.publisher == "iceberg":
        from pyiceberg.catalog import load_catalog
        table = load_catalog("streamslice", **output.catalog).load_table(output.table)
        return table.scan().to_arrow(), len(table.snapshots())
    from deltalake import DeltaTable
    dt = DeltaTable(output.table)
    return dt.to_pyarrow_table(), dt.version() + 1


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_retry_finds_its_commit_and_a_replan_replaces_the_partition(tmp_path, fmt):
    output = target(tmp_path, fmt)
    plan = make_plan(output)
    first = publish_once(plan, stage(tmp_path, plan, [0, 1, 2]), run_id="r1", now_ms=1)
    table, commits = scan(output)
    assert sorted(table.column("offset").to_pylist()) == [0, 1, 2]
    retry = publish_once(plan, Staging(str(tmp_path / "staging" / "s1")), run_id="r1",
                         now_ms=2)
    assert retry.plan_id == first.plan_id and scan(output)[1] == commits  # no new commit
    replan = make_plan(output, planned_at=5)
    publish_once(replan, stage(tmp_path, replan, [0, 1], name="s2"), run_id="r2", now_ms=3)
    table, _ = scan(output)
    assert sorted(table.column("offset").to_pylist()) == [0, 1]  # replaced, not added


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_schema_evolves_with_a_new_column_and_refuses_a_changed_type(tmp_path, fmt):
    output = target(tmp_path, fmt)
    plan = make_plan(output)
    publish_once(plan, stage(tmp_path, plan, [0]), run_id="r1", now_ms=1)
    wider = make_plan(output, planned_at=1, schema=(("n", "long"), ("note", "string")))
    wider.partition = "batch=00000002"
    publish_once(wider, stage(tmp_path, wider, [1], name="s2"), run_id="r2", now_ms=2)
    table, _ = scan(output)
    assert "note" in table.column_names and table.num_rows == 2
    changed = make_plan(output, planned_at=2, schema=(("n", "string"),))
    changed.partition = "batch=00000003"
    with pytest.raises(CommitError, match="schema|Schema|type"):
        publish_once(changed, stage(tmp_path, changed, [2], name="s3"), run_id="r3", now_ms=3)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_rolling_back_a_reprocessed_partition_as_the_readme_shows(tmp_path, fmt):
    output = target(tmp_path, fmt)
    plan = make_plan(output)
    publish_once(plan, stage(tmp_path, plan, [0, 1, 2]), run_id="r1", now_ms=1)
    replan = make_plan(output, planned_at=5)
    publish_once(replan, stage(tmp_path, replan, [0], name="s2"), run_id="r2", now_ms=2)
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog
        table = load_catalog("streamslice", **output.catalog).load_table(output.table)
        previous = [s for s in table.snapshots() if present(s.summary).additional_properties
                    .get("streamslice.run_id") == "r1"][-1]
        table.manage_snapshots().rollback_to_snapshot(previous.snapshot_id).commit()
    else:
        from deltalake import DeltaTable
        dt = DeltaTable(output.table)
        first = next(h["version"] for h in dt.history() if h.get("streamslice.run_id") == "r1")
        dt.restore(first)
    table, _ = scan(output)
    assert sorted(table.column("offset").to_pylist()) == [0, 1, 2]


def test_iceberg_catalog_properties_from_an_airflow_connection(tmp_path, monkeypatch):
    """output.conn_id: the catalog's properties (which may hold credentials) come from the
    connection in the commit task and never enter the plan."""

    from streamslice.airflow.hooks import with_catalog_connection
    connection(monkeypatch, "lake_catalog", "generic", extra={
        "type": "sql", "uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}/wh"})
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output: {{path: '{tmp_path}', format: iceberg, "
                         "conn_id: lake_catalog}\n", default_name="p")
    output = cfg.output.target("p")
    assert output.catalog == {} and "sqlite" not in make_plan(output).to_json()
    resolved = present(with_catalog_connection(output))
    assert resolved.catalog["uri"] == f"sqlite:///{tmp_path}/c.db"
    plan = make_plan(resolved)
    publish_once(plan, stage(tmp_path, plan, [0, 1]), run_id="r1", now_ms=1)
    assert scan(resolved)[0].num_rows == 2


def test_a_rest_catalog_is_passed_through_and_its_failure_named(tmp_path):
    from streamslice.commit.publishers import publisher_for
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output: {{path: '{tmp_path}', format: iceberg, catalog: "
                         "{type: rest, uri: 'http://127.0.0.1:9'}}\n", default_name="p")
    with pytest.raises(CommitError, match=r"cannot open the Iceberg catalog \(rest\)"):
        publisher_for(cfg.output.target("p"))


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_nested_fields_evolve_and_an_incompatible_change_fails_before_anything_lands(tmp_path,
                                                                                     fmt):
    from decimal import Decimal
    output = target(tmp_path, fmt)
    v1 = make_plan(output, schema="n BIGINT, user STRUCT<name: STRING>, tags ARRAY<STRING>")
    publish_once(v1, stage(tmp_path, v1, [0], values={"user": [{"name": "a"}],
                                                      "tags": [["x"]]}), run_id="r1", now_ms=1)
    v2 = make_plan(output, planned_at=1, schema="n BIGINT, user STRUCT<name: STRING, age: INT>,"
                                                " tags ARRAY<STRING>, amount DECIMAL(10,2)")
    v2.partition = "batch=00000002"
    publish_once(v2, stage(tmp_path, v2, [1], name="s2", values={
        "user": [{"name": "b", "age": 7}], "tags": [["y"]], "amount": [Decimal("1.50")]}),
        run_id="r2", now_ms=2)
    table, commits = scan(output)
    rows = sorted(table.select(["offset", "user", "amount"]).to_pylist(),
                  key=lambda r: r["offset"])
    assert rows == [{"offset": 0, "user": {"name": "a", "age": None}, "amount": None},
                    {"offset": 1, "user": {"name": "b", "age": 7}, "amount": Decimal("1.50")}]
    bad = make_plan(output, planned_at=2, schema="n BIGINT, user STRUCT<name: INT, age: INT>, "
                                                 "tags ARRAY<BIGINT>, amount DECIMAL(10,3), "
                                                 "id BIGINT NOT NULL")
    bad.partition = "batch=00000003"
    staged = stage(tmp_path, bad, [2], name="s3", values={"id": [2]})
    from streamslice.kafka.reader import DEAD_LETTER_SCHEMA
    (tmp_path / "staging" / "s3" / "_dead_letter").mkdir()
    pq.write_table(DEAD_LETTER_SCHEMA.empty_table(),
                   tmp_path / "staging" / "s3" / "_dead_letter" / "part-0.parquet")
    with pytest.raises(CommitError) as err:
        publish_once(bad, staged, run_id="r3", now_ms=3)
    assert str(err.value).startswith("incompatible schema change for ")
    for part in ("field 'user.name' is string in the table, int now",
                 "field 'tags[]' is string in the table, bigint now",
                 "field 'amount' is decimal(10,2) in the table, decimal(10,3) now",
                 "new field 'id' is NOT NULL", "nothing was published"):
        assert part in str(err.value)
    assert scan(output)[1] == commits  # no commit
    assert not (tmp_path / "_streamslice" / "pipeline=p" / "dead_letter" /
                "batch=00000003").exists()


def test_which_changes_a_table_can_take():
    from streamslice.commit.publishers.tables import schema_changes
    from streamslice.formats.types import parse_schema as ddl
    have = ddl("a INT, b FLOAT, c DECIMAL(10,2), d TINYINT, s STRUCT<x: STRING>, "
               "m MAP<STRING, INT>, l ARRAY<STRUCT<y: INT>>")
    assert schema_changes(have, ddl("a BIGINT, b DOUBLE, c DECIMAL(12,2), d TINYINT, "
                                    "s STRUCT<x: STRING, z: DATE>, m MAP<STRING, BIGINT>, "
                                    "l ARRAY<STRUCT<y: INT, w: STRING>>, new STRING")) == []
    assert schema_changes(ddl("a INT"), ddl("a SMALLINT")) == []  # Iceberg's int holds it
    assert schema_changes(have, ddl("a STRING, c DECIMAL(10,1), m MAP<STRING, STRING>, "
                                    "l ARRAY<STRUCT<y: STRING>>, s STRUCT<x: STRING NOT NULL,"
                                    " q INT NOT NULL>")) == [
        "field 'a' is int in the table, string now",
        "field 'c' is decimal(10,2) in the table, decimal(10,1) now",
        "field 'm.value' is int in the table, string now",
        "field 'l[].y' is int in the table, string now",
        "new field 's.q' is NOT NULL, but the rows already in the table have no value for it"]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_widened_types_and_a_dropped_field(tmp_path, fmt):
    """Iceberg widens int to bigint, float to double and a decimal's precision; delta-rs keeps
    a column's type (and would fail on the first value beyond it), so there each is refused
    before anything lands. A field no longer declared stays, null in new rows."""
    from decimal import Decimal
    output = target(tmp_path, fmt)
    v1 = make_plan(output, schema="n INT, f FLOAT, d DECIMAL(10,2), note STRING")
    publish_once(v1, stage(tmp_path, v1, [0], values={
        "f": [1.5], "d": [Decimal("1.25")], "note": ["x"]}), run_id="r1", now_ms=1)
    wider = make_plan(output, planned_at=1, schema="n BIGINT, f DOUBLE, d DECIMAL(12,2)")
    wider.partition = "batch=00000002"
    staged = stage(tmp_path, wider, [1], name="s2",
                   values={"n": [2**40], "f": [2.5], "d": [Decimal("1234567890.25")]})
    if fmt == "delta":
        with pytest.raises(CommitError) as err:
            publish_once(wider, staged, run_id="r2", now_ms=2)
        assert ("field 'n' is int in the table, bigint now; field 'f' is float in the table, "
                "double now; field 'd' is decimal(10,2) in the table, decimal(12,2) now") \
            in str(err.value)
        narrower = make_plan(output, planned_at=2, schema="n SMALLINT, d DECIMAL(10,2)")
        narrower.partition = "batch=00000002"
        publish_once(narrower, stage(tmp_path, narrower, [1], name="s3", values={
            "d": [Decimal("2.50")]}), run_id="r3", now_ms=3)
        expected: dict[str, object] = {"n": 10, "f": None, "d": Decimal("2.50"), "note": None}
    else:
        publish_once(wider, staged, run_id="r2", now_ms=2)
        expected = {"n": 2**40, "f": 2.5, "d": Decimal("1234567890.25"), "note": None}
    table, _ = scan(output)
    rows = sorted(table.select(["n", "f", "d", "note"]).to_pylist(), key=lambda r: r["n"])
    assert rows == [{"n": 0, "f": 1.5, "d": Decimal("1.25"), "note": "x"}, expected]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_each_commit_carries_its_run_and_the_staged_files_are_not_rewritten(tmp_path, fmt):
    """*Lake tables*: every commit carries streamslice.pipeline, run_id, plan_id,
    end_positions and manifest; Iceberg registers the staged file itself (linked into the
    table's folder, not rewritten), Delta records an application transaction (app id =
    pipeline, version = batch)."""
    import json
    import os

    from streamslice.commit.manifest import plan_id
    output = target(tmp_path, fmt)
    plan = make_plan(output)
    staged = stage(tmp_path, plan, [0, 1, 2])
    inode = os.stat(f"{staged.root}/data/part-0.parquet").st_ino
    publish_once(plan, staged, run_id="r1", now_ms=1)
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog
        table = load_catalog("streamslice", **output.catalog).load_table(output.table)
        props = present(present(table.current_snapshot()).summary).additional_properties
        (data,) = [task.file.file_path for task in table.scan().plan_files()]
        assert os.stat(data.removeprefix("file://")).st_ino == inode
    else:
        from deltalake import DeltaTable
        delta = DeltaTable(output.table)
        props = delta.history(1)[0]
        assert delta.transaction_version("p") == plan.batch == 1
    assert (props["streamslice.pipeline"], props["streamslice.run_id"]) == ("p", "r1")
    assert props["streamslice.plan_id"] == plan_id(plan)
    assert json.loads(props["streamslice.end_positions"]) == {"t:0": 3}
    assert json.loads(props["streamslice.manifest"])["records"] == 3


def test_a_crash_before_the_iceberg_commit_leaves_orphans_no_reader_sees(tmp_path, monkeypatch):
    """*Outputs*: killed between moving the files into the table's folder and the catalog
    commit, the retry commits its own moved files; the first try's stay in the folder with no
    snapshot naming them (Iceberg's orphan files), and the table reads each row once."""
    from pyiceberg.catalog import load_catalog

    from streamslice.errors import InjectedFault
    output = target(tmp_path, "iceberg")
    plan = make_plan(output)
    staged = stage(tmp_path, plan, [0, 1, 2])
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "table_commit")
    with pytest.raises(InjectedFault):
        publish_once(plan, staged, run_id="r1", now_ms=1)
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    publish_once(plan, staged, run_id="r1", now_ms=2)
    table, _ = scan(output)
    assert sorted(table.column("offset").to_pylist()) == [0, 1, 2]
    iceberg = load_catalog("streamslice", **output.catalog).load_table(output.table)
    named = {t.file.file_path for t in iceberg.scan().plan_files()}
    on_disk = set(Path(iceberg.location().removeprefix("file://")).rglob("data/**/*.parquet"))
    assert len(named) == 1 and len(on_disk) == 2
