"""The ReadPlan: the JSON list of splits for one run, saved so a retry reads the same ranges."""
import json
from dataclasses import asdict, dataclass, field, fields

PLAN_VERSION = 1


@dataclass
class KafkaSplit:
    """One topic-partition offset range ``[start, stop)``.

    ``late_from`` / ``owned_until`` are set in interval mode (see ``interval.py``): records
    older than the interval are kept, flagged late, only between them.
    """

    id: int
    topic: str
    partition: int
    start: int
    stop: int
    log_start: int = 0
    high_watermark: int = 0
    late_from: int = None
    owned_until: int = None

    @property
    def key(self):
        return f"{self.topic}:{self.partition}"

    @property
    def size(self):
        return max(0, self.stop - self.start)

    @property
    def lag(self):
        """Records behind the high watermark at plan time (from where this split starts)."""
        return max(0, self.high_watermark - self.start)


@dataclass
class Interval:
    start: int  # epoch ms, inclusive
    end: int  # epoch ms, exclusive
    allowed_lateness: int = 0  # ms

    @property
    def width(self):
        return self.end - self.start


@dataclass
class ReadPlan:
    pipeline: str
    source: str  # "kafka" | "kinesis"
    mode: str  # "interval" | "incremental" | "bounded"
    planned_at: int  # epoch ms
    splits: list
    partition: str  # output partition, relative: "interval=…" or "batch=…"
    run_id: str = None
    interval: Interval = None
    batch: int = None
    base_checkpoint: dict = None  # the checkpoint this plan started from (None: none yet)
    next_positions: dict = field(default_factory=dict)  # what the checkpoint becomes on commit
    gaps: list = field(default_factory=list)  # skipped data loss: {key, from, to, reason}
    decode: dict = field(default_factory=dict)
    source_info: dict = field(default_factory=dict)  # bootstrap servers, stream ARN: no secrets
    version: int = PLAN_VERSION

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_dict(self):
        data = asdict(self)
        data["splits"] = [asdict(s) for s in self.splits]
        return data

    @classmethod
    def from_dict(cls, data):
        data = dict(data)
        split_type = _split_type(data["source"])
        data["splits"] = [_build(split_type, s) for s in data["splits"]]
        if data.get("interval"):
            data["interval"] = Interval(**data["interval"])
        return _build(cls, data)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))

    @property
    def total_records_hint(self):
        return sum(getattr(s, "size", 0) for s in self.splits)


def _split_type(source):
    if source == "kafka":
        return KafkaSplit
    if source == "kinesis":
        from .kinesis.split import KinesisSplit
        return KinesisSplit
    raise ValueError(f"unknown source {source!r} in plan")


def _build(cls, data):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
