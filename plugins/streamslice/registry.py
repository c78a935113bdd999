"""The registries' one lookup. Sources, formats, runners and publishers are each registered by
one line, name → ``"module:Class"``, and imported on first use, so a Kafka run never loads
boto3 and a Parquet output never loads pyiceberg. ``load`` is the one loader of such a path
(a source's lifecycle tasks name their functions the same way)."""
from __future__ import annotations

import importlib
from typing import Any


def registered_class(registry: dict[str, str], name: str, what: str) -> Any:
    """The class registered as ``name`` (the caller types it: a registry's classes share a
    base or protocol); ValueError naming ``what`` and the known names if there is none."""
    try:
        path = registry[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r} (known: {', '.join(registry)})") from None
    return load(path)


def load(path: str) -> Any:
    """The object at ``module:name``, or at ``package.module.name`` (after the last dot)."""
    module, sep, attr = path.partition(":")
    if not sep:
        module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)
