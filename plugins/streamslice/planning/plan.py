"""The ReadPlan: the JSON list of splits for one run, saved so a retry reads the same ranges
and publishes to the same place."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..splits import Split

PLAN_VERSION = 2


@dataclass
class Interval:
    start: int  # epoch ms, inclusive
    end: int  # epoch ms, exclusive
    allowed_lateness: int = 0  # ms

    @property
    def width(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class OutputTarget:
    """Where and how a run publishes: planned once, so read and commit agree even if the
    pipeline file is edited between the two tasks."""

    dataset: str  # URI of the pipeline's dataset root (…/pipeline=<name>)
    format: str = "parquet"
    compression: str = "snappy"
    publisher: str = "files"  # a key of commit.publishers.PUBLISHERS
    table: str | None = None  # iceberg: namespace.table; delta: the table's URI
    catalog: dict[str, str] = field(default_factory=dict)  # iceberg catalog properties
    conn_id: str | None = None  # an Airflow connection holding more catalog properties

    @property
    def file_format(self) -> str:
        """What the read job stages: table formats take Parquet files."""
        return self.format if self.publisher == "files" else "parquet"

    @property
    def work(self) -> str:
        """Staging, trash and dead letters: ``<root>/_streamslice/<dataset name>``, a sibling
        of the dataset, so nothing but data is under the dataset for any reader's glob."""
        root, _, name = self.dataset.rstrip("/").rpartition("/")
        return f"{root}/_streamslice/{name}"

    def dead_letters(self, partition: str) -> str:
        return f"{self.work}/dead_letter/{partition}"


@dataclass
class ReadPlan:
    pipeline: str
    source: str  # a key of sources.SOURCES
    mode: str  # "interval" | "incremental" | "bounded"
    planned_at: int  # epoch ms
    splits: list[Split]
    partition: str  # output partition, relative: "interval=…" or "batch=…"
    output: OutputTarget | None = None
    run_id: str | None = None
    interval: Interval | None = None
    batch: int | None = None
    base_checkpoint: dict[str, Any] | None = None  # the checkpoint this plan started from
    next_positions: dict[str, Any] = field(default_factory=dict)  # the checkpoint on commit
    gaps: list[dict[str, Any]] = field(default_factory=list)  # skipped data loss
    decode: dict[str, Any] = field(default_factory=dict)
    source_info: dict[str, Any] = field(default_factory=dict)  # servers, stream ARNs: no secrets
    version: int = PLAN_VERSION

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["splits"] = [s.to_dict() for s in self.splits]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReadPlan:
        from ..sources import source_class
        data = dict(data)
        split_from_dict = source_class(data["source"]).split_from_dict
        data["splits"] = [split_from_dict(s) for s in data["splits"]]
        if data.get("interval"):
            data["interval"] = Interval(**data["interval"])
        if data.get("output"):
            data["output"] = OutputTarget(**data["output"])
        return build(cls, data)

    @classmethod
    def from_json(cls, text: str) -> ReadPlan:
        return cls.from_dict(json.loads(text))

    @property
    def total_records_hint(self) -> int:
        return sum(s.size or 0 for s in self.splits)


def build(cls: Any, data: dict[str, Any]) -> Any:
    """A dataclass from a dict, ignoring keys it does not have (older or newer plans)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
