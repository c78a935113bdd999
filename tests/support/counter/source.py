"""``counter: {partitions: N, upto: M}``: N partitions, each holding the records ``0`` … ``M-1``
(the number as text) at positions 0 … M-1. The smallest source that meets the whole
contract, in one module: configuration, planner, reader factory and split serializer. Nothing
outside this package names it; the test registers it by one line."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from streamslice.planning.plan import build
from streamslice.reading.loop import SplitReader
from streamslice.sources import (
    Planner,
    ReaderFactory,
    ResetTarget,
    Source,
    SourcePlan,
    SplitSerializer,
)

if TYPE_CHECKING:
    from streamslice.splits import LagUnit

_META = [("partition", pa.string()), ("n", pa.int64())]


@dataclass
class CounterSplit:
    id: int
    partition: int
    start: int
    stop: int

    lag_unit: ClassVar[LagUnit] = "records"

    @property
    def key(self) -> str:
        return f"c:{self.partition}"

    @property
    def end(self) -> int:
        return self.stop

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def lag(self) -> int:
        return self.stop - self.start

    @property
    def offset_range(self) -> tuple[int, int]:
        return self.start, self.stop

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CounterSource(Source[CounterSplit]):
    partitions: int
    upto: int
    conn_id: str | None = None

    kind = "counter"
    option_prefix = "counter."
    options = ("partitions", "upto")
    lag_unit = "records"

    @classmethod
    def parse(cls, f: Any, mode: str, pipeline: str) -> CounterSource:
        source = cls(partitions=f.int("partitions"), upto=f.int("upto"))
        f.done()
        return source

    @classmethod
    def from_options(cls, options: dict[str, str]) -> tuple[CounterSource, dict[str, Any]]:
        return cls(int(options["partitions"]), int(options["upto"])), {}

    def client_properties(self, resolved: dict[str, Any] | None = None) -> dict[str, Any]:
        return dict(resolved or {})

    def describe(self) -> str:
        return f"{self.partitions} counters"

    def describe_where(self) -> str:
        return "memory"

    def describe_bounds(self, mode: str) -> str:
        return f"checkpoint → {self.upto}"

    def describe_start(self) -> str:
        return "0"

    def planner(self) -> CounterPlanner:
        return CounterPlanner(self)

    @classmethod
    def readers(cls) -> CounterReaders:
        return CounterReaders()

    @classmethod
    def serializer(cls) -> CounterSplitSerializer:
        return CounterSplitSerializer()


@dataclass(frozen=True)
class CounterPlanner(Planner[CounterSplit]):
    source: CounterSource

    def split_keys(self, properties: dict[str, Any]) -> list[str]:
        return [f"c:{p}" for p in range(self.source.partitions)]

    def plan(self, request: Any) -> SourcePlan[CounterSplit]:
        done = request.checkpoint.positions if request.checkpoint else {}
        splits = [CounterSplit(p, p, done.get(f"c:{p}", 0), self.source.upto)
                  for p in range(self.source.partitions)]
        return SourcePlan(splits, next_positions={s.key: s.stop for s in splits})

    def reset_positions(self, to: Any, properties: dict[str, Any]) -> ResetTarget:
        return ResetTarget(dict.fromkeys(self.split_keys(properties), 0))


class CounterReaders(ReaderFactory[CounterSplit]):
    verify_columns = (("partition",), "n")

    def record_schema(self, decoder: Any, plan: Any) -> pa.Schema:
        return pa.schema([*decoder.value_fields("value"), *_META])

    def open_reader(self, split: CounterSplit, request: Any) -> CounterReader:
        return CounterReader(split, decoder=request.decoder, staging=request.staging)

    def lineage_dataset(self, plan: Any, split: CounterSplit) -> Any:
        from streamslice.monitoring.lineage import location_dataset
        return location_dataset("memory://counter")


class CounterReader(SplitReader[CounterSplit]):
    dead_letter_schema = pa.schema([("value", pa.binary()), *_META, ("error", pa.string())])

    def fetch(self) -> list[list[int]]:
        return [list(range(self.split.start, self.split.stop))]

    def positions(self, raw: list[int]) -> list[int]:
        return raw

    def to_arrow(self, raw: list[int]) -> pa.RecordBatch:
        values, _ = self.decoder.decode_values([str(n).encode() for n in raw])
        self.stats.kept(raw, pa.array([0] * len(raw), pa.int64()), None, 0)
        schema = pa.schema([*self.decoder.value_fields("value"), *_META])
        return pa.RecordBatch.from_arrays(
            [*values, pa.array([self.split.key] * len(raw)), pa.array(raw, pa.int64())],
            schema=schema)


class CounterSplitSerializer(SplitSerializer[CounterSplit]):
    def from_dict(self, data: dict[str, Any]) -> CounterSplit:
        split: CounterSplit = build(CounterSplit, data, "counter split")
        return split
