"""Records for tests that need only a few of their fields: a manifest (``Manifest``) whose
other fields are those of an empty run, its splits' summaries given as the JSON a reader
writes (so a summary from before ``lag_unit`` reads as one does)."""
from typing import Any

from streamslice.commit.manifest import Manifest
from streamslice.monitoring.metrics import RunMetrics
from streamslice.planning.plan import Interval
from streamslice.reading.stats import SplitSummary


def summary(json=None, **fields):
    """A split summary from its JSON (``json``) and ``fields``; split, key and range are
    made up when not given."""
    return SplitSummary.from_dict({"split": 0, "key": "t:0", "start": 0, "stop": 0,
                                   **(json or {}), **fields})


def manifest(splits=(), interval=None, **fields):
    """A manifest with ``fields``; ``splits`` as summaries' JSON, ``interval`` as a dict."""
    base: dict[str, Any] = dict(
        pipeline="p", source="kafka", mode="incremental", partition="batch=00000001",
        plan_id="0", run_id=None, committed_at=None, records=0, dead_letters=0,
        dead_letter_uri=None, late_records=0, min_timestamp=None, max_timestamp=None,
        batch=None, gaps=[])
    return Manifest(**{**base, **fields},
                    splits=[summary(s, split=i) for i, s in enumerate(splits)],
                    interval=Interval(**interval) if interval else None)


def run_metrics(**fields):
    """A run's metrics (the asset event's extra) with ``fields``, the rest an empty run's."""
    base = dict(partition="", records=0, dead_letters=0, late_records=0, min_timestamp=None,
                max_timestamp=None, batch=None, plan_id="0", splits=0, bytes=0,
                lag_records=None, millis_behind_latest=None, gaps=0)
    return RunMetrics(**{**base, **fields})
