"""Spark data source options as every source reads them: string values, keys compared
case-insensitively (callers lower-case them), JSON where a value is structured."""
from __future__ import annotations

import json

from ..errors import ConfigError


def client_properties(opts: dict[str, str], prefix: str,
                      keep: bool = False) -> dict[str, str]:
    """``kafka.bootstrap.servers`` → ``bootstrap.servers`` for ``prefix`` ``kafka.``
    (``keep``: the names as they are)."""
    return {k if keep else k[len(prefix):]: v for k, v in opts.items()
            if k.lower().startswith(prefix)}


def json_option(opts: dict[str, str], name: str) -> dict[str, object]:
    """The JSON object in option ``name``; what its values are is the caller's to check."""
    try:
        value = json.loads(opts[name])
    except ValueError as exc:
        raise ConfigError(f"option {name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"option {name} must be a JSON object")
    return value


def positive(opts: dict[str, str], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(f"option {name}: {value!r} is not a whole number") from None
    if number <= 0:
        raise ConfigError(f"{name} must be positive")
    return number


def boolean(opts: dict[str, str], name: str, default: bool, *, label: str = "") -> bool:
    """Option ``name`` as Spark reads a flag: ``true`` or ``false`` in any case, nothing
    else; ``label`` is the name the error shows (``kinesis.failOnDataLoss``)."""
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ConfigError(f"option {label or name}: {value!r} is not a boolean (true or false)")
    return value.lower() == "true"
