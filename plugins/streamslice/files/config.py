"""The ``files:`` block of a pipeline file."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config.fields import Fields
    from .source import FileSource

STARTS = ("earliest", "latest")


def parse_files(f: Fields, mode: str, pipeline: str) -> FileSource:
    """``f`` is a Fields over the files mapping."""
    from .source import FileSource
    if mode == "interval":
        raise f.error("lines in a file carry no time to cut intervals by; use mode "
                      "incremental (each run reads the lines added since the last)")
    path = f.str("path")
    if "://" not in path and not os.path.isabs(path):
        raise f.error(f"{path!r} must be an absolute path or a URI (s3://bucket/prefix, "
                      "file:///…); ${VAR} takes one from the environment", "path")
    source = FileSource(path=path.rstrip("/") or "/", pattern=f.str("pattern", "*"),
                        start=f.str("start", "earliest", choices=STARTS))
    f.done()
    return source
