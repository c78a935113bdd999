"""Publishers are registered classes that own their settings (``commit.publishers``): one
registered by one line in ``PUBLISHERS`` is chosen by ``output.format``, validates its own
keys of the ``output:`` block with errors naming file, line and field, gives the plan its
``OutputTarget`` and publishes it; a pipeline imports only its own format's publisher. The
publisher registered here is a stand-in that lands nothing (the real ones publish in
test_commit.py, test_table_publishers.py and the integration tests)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from streamslice.commit import publishers
from streamslice.commit.publishers import OutputSettings
from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError
from tests.support.pipelines import modules_loaded_parsing

HEAD = "mode: incremental\nkafka: {bootstrap_servers: 'b:9092', topics: [t]}\n"


@dataclass(frozen=True)
class LedgerSettings(OutputSettings):
    """The output: keys a new output takes, as its module would declare them."""

    keys: ClassVar[dict[str, str]] = {"ledger": "is only used with format ledger"}
    ledger: str = "main"
    shards: int = 1

    @classmethod
    def parse(cls, f, fmt, path):
        return cls(ledger=f.str("ledger", "main"), shards=f.int("shards", 1, minimum=1))

    def target(self, dataset, pipeline):
        return {"table": f"{self.ledger}/{self.shards}"}


class LedgerPublisher:
    name: ClassVar[str] = "ledger"
    settings: ClassVar[type[OutputSettings]] = LedgerSettings
    extra: ClassVar[str | None] = None
    stages: ClassVar[str | None] = "parquet"

    def __init__(self, output):
        self.output = output


LedgerSettings.keys["shards"] = "is only used with format ledger (its shard count)"


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(publishers.PUBLISHERS, "ledger", f"{__name__}:LedgerPublisher")


def parse(output):
    return parse_pipeline(HEAD + "output:\n  path: /lake\n" + output, file="p.yaml",
                          default_name="p")


def error(output):
    with pytest.raises(ConfigError) as info:
        parse(output)
    return str(info.value)


def test_a_publisher_registered_by_one_line_is_chosen_planned_and_opened():
    cfg = parse("  format: ledger\n  ledger: audit\n  shards: 4\n")
    assert cfg.output.settings == LedgerSettings(ledger="audit", shards=4)
    target = cfg.output.target("p")
    assert (target.format, target.publisher, target.table, target.dataset) == \
        ("ledger", "ledger", "audit/4", "/lake/pipeline=p")
    publisher = publishers.publisher_for(target)
    assert isinstance(publisher, LedgerPublisher) and publisher.output == target
    assert publishers.staged_format(target) == "parquet"  # what the read job stages for it


def test_the_registered_publisher_validates_its_own_keys_naming_the_field():
    assert error("  format: ledger\n  shards: 0\n") == \
        "p.yaml:6: output.shards: must be at least 1, got 0"
    assert error("  format: ledger\n  shard: 2\n").startswith(
        "p.yaml:6: output.shard: unknown key 'shard' (allowed here: aws, compression, format, "
        "ledger, path, shards)")
    assert error("  format: csv\n") == ("p.yaml:5: output.format: 'csv' is not one of: "
                                        "parquet, json, orc, iceberg, delta, ledger")
    # its keys, given to another format, are refused in its words
    assert error("  ledger: audit\n") == "p.yaml:5: output.ledger: is only used with format ledger"
    assert error("  format: delta\n  shards: 2\n") == \
        "p.yaml:6: output.shards: is only used with format ledger (its shard count)"


@pytest.mark.parametrize("fmt, output, said", [
    ("parquet", "conn_id: c", "output.conn_id: is only used with format iceberg (its catalog's "
                              "connection)"),
    ("json", "table: a.b", "output.table: is only used with format iceberg or delta"),
    ("delta", "catalog: {type: sql}", "output.catalog: is only used with format iceberg"),
    ("iceberg", "partition_path: '%Y'", "output.partition_path: is for folder outputs "
                                        "(parquet, json, orc); a iceberg table is partitioned "
                                        "by the table itself"),
    ("orc", "partition_by: day(ts)", "output.partition_by: is for format iceberg (a partition "
                                     "spec with a time transform) or delta (a partition column "
                                     "of it); folders take partition_path"),
    ("iceberg", "table: nodots", "output.table: 'nodots' is not namespace.table"),
    ("delta", "aws: {region: eu-west-1}", "output.aws: is for an output on S3 or in a Glue "
                                          "catalog (output.path is '/lake')"),
])
def test_the_built_in_publishers_keys_keep_their_texts(fmt, output, said):
    assert error(f"  format: {fmt}\n  {output}\n") == f"p.yaml:6: {said}"


def test_a_pipeline_imports_only_its_own_formats_publisher():
    """A Parquet pipeline loads the files publisher: no table publisher, no table library,
    and not pandas (which pyarrow.dataset would bring)."""
    loaded = modules_loaded_parsing(
        HEAD + "output: {path: /x}\n",
        ("streamslice.commit.publishers.", "pyiceberg", "deltalake", "pandas"))
    assert loaded == ["streamslice.commit.publishers.files"]
