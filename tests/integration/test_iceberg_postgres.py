"""The Iceberg SQL catalog on a real PostgreSQL server (as docker-compose and production run
it): intervals commit, a replan replaces its partition, and two pipelines share the catalog."""
import pytest

from streamslice.commit.protocol import publish_once
from tests.support.pipelines import parsed
from tests.unit.test_table_publishers import make_plan, stage

pytestmark = pytest.mark.integration


def target(tmp_path, postgres, name):
    cfg = parsed("kafka", {"bootstrap_servers": "a:1", "topics": ["t"]}, name=name, output={
        "path": str(tmp_path), "format": "iceberg", "table": f"lake.{name}",
        "catalog": {"type": "sql", "uri": postgres.url, "warehouse": f"file://{tmp_path}/warehouse"}})
    return cfg.output.target(name)


def test_iceberg_tables_in_a_postgres_catalog(tmp_path, postgres):
    import uuid

    from pyiceberg.catalog import load_catalog
    names = [f"p{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for i, name in enumerate(names):
        output = target(tmp_path, postgres, name)
        plan = make_plan(output)
        publish_once(plan, stage(tmp_path, plan, [0, 1, 2], name=f"{name}-a"), run_id="r1",
                     now_ms=1)
        replan = make_plan(output, planned_at=1)
        publish_once(replan, stage(tmp_path, replan, [0, 1][: i + 1], name=f"{name}-b"),
                     run_id="r2", now_ms=2)
    catalog = load_catalog("streamslice", type="sql", uri=postgres.url,
                           warehouse=f"file://{tmp_path}/warehouse")
    counts = [catalog.load_table(f"lake.{n}").scan().to_arrow().num_rows for n in names]
    assert counts == [1, 2]
    assert {f"lake.{n}" for n in names} <= {".".join(t) for t in catalog.list_tables("lake")}
