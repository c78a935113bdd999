"""Partition paths: where an interval's partition lives under the dataset, chosen by the user
from the interval's start time (``output.partition_path``), so query engines prune on it.

The default keeps the partition's name as its folder (``interval=20240501T000000Z``). A
template such as ``dt=%Y-%m-%d/hour=%H`` (strftime, UTC) lays intervals out Hive-style:
DuckDB's ``hive_partitioning``, Spark's partition discovery and a Glue/Hive catalog read each
``key=value`` folder as a column and skip the folders a filter on it excludes. The partition's
identity stays its name (``interval=…``): checkpoints, manifests, dead letters, staging and the
page key by it; only where the files land changes.

A template must give every interval a folder of its own, or one interval's publish would
replace another's: it names the year, month and day (``%Y`` and ``%m``/``%d`` or ``%j``, or
``%F``) and every finer unit down to the schedule's interval (``%H`` for hourly, ``%M`` for
15-minute intervals, …), and nothing that does not identify a time (no ``%a``, ``%p``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..timestamps import from_ms

# Directives a partition path may use → the units they name.
DIRECTIVES = {"Y": {"year"}, "m": {"month"}, "d": {"day"}, "j": {"month", "day"},
              "F": {"year", "month", "day"}, "H": {"hour"}, "M": {"minute"}, "S": {"second"}}
UNITS = (("year", 365 * 86_400_000), ("month", 28 * 86_400_000), ("day", 86_400_000),
         ("hour", 3_600_000), ("minute", 60_000), ("second", 1000))
_LITERAL = re.compile(r"[A-Za-z0-9_.=-]*")
_DIRECTIVE = re.compile(r"%(.)")


@dataclass(frozen=True)
class PartitionPath:
    template: str

    def render(self, start_ms: int) -> str:
        """The folder (relative, ``/``-separated) of the interval starting at ``start_ms``."""
        return from_ms(start_ms).strftime(self.template)

    def columns(self, start_ms: int) -> dict[str, str]:
        """The ``key=value`` folders of the interval's path, as engines read them."""
        out = {}
        for segment in self.render(start_ms).split("/"):
            key, eq, value = segment.partition("=")
            if eq:
                out[key] = value
        return out

    @property
    def keys(self) -> list[str]:
        return [s.split("=", 1)[0] for s in self.template.split("/") if "=" in s]


def check_template(template: str, shortest_interval_ms: int) -> PartitionPath:
    """The template, or ValueError saying what is wrong with it (config errors add where)."""
    if not template or template.startswith("/") or template.endswith("/"):
        raise ValueError(f"{template!r} must be a relative folder path such as "
                         "'dt=%Y-%m-%d/hour=%H'")
    units: set[str] = set()
    for segment in template.split("/"):
        literal = _DIRECTIVE.sub("", segment.replace("%%", ""))
        if not segment or segment in (".", "..") or not _LITERAL.fullmatch(literal):
            raise ValueError(f"{template!r}: folder {segment!r} may hold only letters, digits, "
                             "'_', '-', '.', '=' and strftime directives")
        for d in _DIRECTIVE.findall(segment.replace("%%", "")):
            if d not in DIRECTIVES:
                allowed = " ".join("%" + k for k in DIRECTIVES)
                raise ValueError(f"{template!r}: %{d} is not allowed; a partition path names "
                                 f"the interval's time with {allowed}")
            units |= DIRECTIVES[d]
        key = segment.partition("=")[0]
        if "=" in segment and ("%" in key or not key):
            raise ValueError(f"{template!r}: folder {segment!r} needs a fixed name before '=' "
                             "(the column engines read it as)")
    keys = [s.partition("=")[0] for s in template.split("/") if "=" in s]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{template!r} names a column twice")
    if "pipeline" in keys:
        raise ValueError(f"{template!r}: 'pipeline' is the dataset's own folder column "
                         "(pipeline=<name>)")
    finest = max((i for i, (unit, _) in enumerate(UNITS) if unit in units), default=-1)
    missing = [unit for unit, _ in UNITS[:finest + 1] if unit not in units]
    if finest < 0 or missing:
        raise ValueError(f"{template!r} does not name the {', '.join(missing or ['year'])} "
                         "of an interval: two intervals would share a folder")
    unit, length = UNITS[finest]
    if length > shortest_interval_ms:
        finer = UNITS[finest + 1][0] if finest + 1 < len(UNITS) else "second"
        raise ValueError(f"{template!r} names intervals to the {unit}, but the schedule's "
                         f"intervals are {shortest_interval_ms // 1000}s long: two intervals "
                         f"would share a folder (add the {finer})")
    return PartitionPath(template)
