"""Typed access to one YAML mapping, with errors that name the file, the line and the field."""
from ..errors import ConfigError
from .yamlfile import line_of

_MISSING = object()


class Fields:
    """Reads keys from a mapping; ``done()`` rejects keys nobody asked for."""

    def __init__(self, mapping, *, file=None, path="", parent_line=None):
        if mapping is None:
            mapping = {}
        self.file, self.path = file, path
        self.line = line_of(mapping) or parent_line
        if not isinstance(mapping, dict):
            raise self.error(f"must be a mapping, got {_kind(mapping)}")
        self.mapping = mapping
        self.seen = set()

    # -- errors -------------------------------------------------------------------------------
    def name(self, key):
        return f"{self.path}.{key}" if self.path else str(key)

    def error(self, message, key=None):
        line = line_of(self.mapping, key) if key is not None and isinstance(self.mapping, dict) \
            else self.line
        field = self.name(key) if key is not None else (self.path or None)
        return ConfigError(message, file=self.file, line=line or self.line, field=field)

    # -- access -------------------------------------------------------------------------------
    def has(self, key):
        return key in self.mapping

    def raw(self, key, default=_MISSING):
        self.seen.add(key)
        if key not in self.mapping:
            if default is _MISSING:
                raise self.error("is required", key)
            return default
        return self.mapping[key]

    def str(self, key, default=_MISSING, choices=None):
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"must be a non-empty string, got {_kind(value)}", key)
        if choices and value not in choices:
            raise self.error(f"{value!r} is not one of: {', '.join(choices)}", key)
        return value

    def int(self, key, default=_MISSING, minimum=None, maximum=2**63 - 1):
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"must be a whole number, got {_kind(value)}", key)
        if minimum is not None and value < minimum:
            raise self.error(f"must be at least {minimum}, got {value}", key)
        if maximum is not None and value > maximum:
            raise self.error(f"must be at most {maximum}, got {value}", key)
        return value

    def bool(self, key, default=_MISSING):
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(f"must be true or false, got {_kind(value)}", key)
        return value

    def list(self, key, default=_MISSING):
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not value:
            raise self.error(f"must be a non-empty list, got {_kind(value)}", key)
        return value

    def child(self, key, required=False):
        value = self.raw(key, _MISSING if required else None)
        return Fields(value, file=self.file, path=self.name(key),
                      parent_line=line_of(self.mapping, key))

    def parse(self, key, parser, default=_MISSING):
        """Apply ``parser`` (which raises ValueError with a reason) to a value."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        try:
            return parser(value)
        except ValueError as exc:
            raise self.error(str(exc), key) from None

    def done(self):
        unknown = [k for k in self.mapping if k not in self.seen]
        if unknown:
            key = unknown[0]
            allowed = ", ".join(sorted(str(k) for k in self.seen))
            raise self.error(f"unknown key {key!r} (allowed here: {allowed})", key)


def _kind(value):
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
