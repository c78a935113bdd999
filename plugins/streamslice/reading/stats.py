"""What a reader saw on one split: the summary the commit step verifies and the manifest shows.

``lag`` starts as the split's own (records behind at plan time); a reader that measures it
(Kinesis' MillisBehindLatest) replaces it through ``note``. ``lag_unit`` says which it is."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from ..splits import Split


class SplitStats:
    def __init__(self, split: Split) -> None:
        self.split = split
        self.d: dict[str, Any] = {"split": split.id, "key": split.key, "start": split.start,
                  "stop": split.end, "scanned": 0, "records": 0, "late": 0,
                  "outside_interval": 0, "dead_letters": 0, "bytes": 0,
                  "first": None, "last": None, "min_timestamp": None, "max_timestamp": None,
                  "reached_stop": False, "lag": split.lag, "lag_unit": split.lag_unit}

    def scanned(self, positions: Sequence[Any]) -> None:
        if not positions:
            return
        self.d["scanned"] += len(positions)
        if self.d["first"] is None:
            self.d["first"] = positions[0]
        self.d["last"] = positions[-1]

    def outside(self, n: int) -> None:
        self.d["outside_interval"] += n

    def dead_letters(self, n: int) -> None:
        self.d["dead_letters"] += n

    def kept(self, positions: Sequence[Any], timestamps_ms: pa.Array,
             late_mask: pa.Array | None, nbytes: int,
             early_mask: pa.Array | None = None) -> None:
        """``early_mask``: with an event-time field (whose summaries then count ``early``)."""
        n = len(positions)
        if early_mask is not None:
            self.d["early"] = self.d.get("early", 0) + (pc.sum(early_mask).as_py() or 0)
        if not n:
            return
        self.d["records"] += n
        self.d["bytes"] += nbytes
        if late_mask is not None:
            self.d["late"] += pc.sum(late_mask).as_py() or 0
        lo, hi = pc.min_max(timestamps_ms).values()
        lo, hi = lo.as_py(), hi.as_py()
        if self.d["min_timestamp"] is None or lo < self.d["min_timestamp"]:
            self.d["min_timestamp"] = lo
        if self.d["max_timestamp"] is None or hi > self.d["max_timestamp"]:
            self.d["max_timestamp"] = hi

    def note(self, **extra: Any) -> None:
        self.d.update(extra)

    def reached_stop(self) -> None:
        self.d["reached_stop"] = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.d)
