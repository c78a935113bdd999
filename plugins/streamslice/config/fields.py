"""Typed access to one YAML mapping, with errors that name the file, the line and the field.

Each accessor returns the checked value, or ``default`` (of whatever type the caller gives)
when the key is absent; without a default the key is required."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..errors import ConfigError
from .yamlfile import line_of

if TYPE_CHECKING:
    import builtins
    from collections.abc import Callable, Container, Sequence

_MISSING: Any = object()
_D = TypeVar("_D")  # a default, of whatever type the caller gives
_T = TypeVar("_T")
_S = TypeVar("_S", bound=str)  # one of the choices given (a Literal where they are typed so)


class Fields:
    """Reads keys from a mapping; ``done()`` rejects keys nobody asked for."""

    def __init__(self, mapping: Any, *, file: builtins.str | None = None, path: builtins.str = "",
                 parent_line: builtins.int | None = None) -> None:
        if mapping is None:
            mapping = {}
        self.file, self.path = file, path
        self.line = line_of(mapping) or parent_line
        if not isinstance(mapping, dict):
            raise self.error(f"must be a mapping, got {_kind(mapping)}")
        self.mapping = mapping
        self.seen: set[Any] = set()

    # -- errors -------------------------------------------------------------------------------
    def name(self, key: Any) -> builtins.str:
        return f"{self.path}.{key}" if self.path else str(key)

    def error(self, message: builtins.str, key: Any = None) -> ConfigError:
        line = line_of(self.mapping, key) if key is not None and isinstance(self.mapping, dict) \
            else self.line
        field = self.name(key) if key is not None else (self.path or None)
        return ConfigError(message, file=self.file, line=line or self.line, field=field)

    # -- access -------------------------------------------------------------------------------
    def has(self, key: Any) -> builtins.bool:
        return key in self.mapping

    def raw(self, key: Any, default: Any = _MISSING) -> Any:
        self.seen.add(key)
        if key not in self.mapping:
            if default is _MISSING:
                raise self.error("is required", key)
            return default
        return self.mapping[key]

    @overload
    def str(self, key: Any) -> builtins.str:
        ...

    @overload
    def str(self, key: Any, *, choices: Sequence[_S]) -> _S:
        ...

    @overload
    def str(self, key: Any, default: _D) -> builtins.str | _D:
        ...

    @overload
    def str(self, key: Any, default: _D, choices: Sequence[_S]) -> _S | _D:
        ...

    def str(self, key: Any, default: Any = _MISSING,
            choices: Sequence[builtins.str] | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"must be a non-empty string, got {_kind(value)}", key)
        if choices and value not in choices:
            raise self.error(f"{value!r} is not one of: {', '.join(choices)}", key)
        return value

    @overload
    def int(self, key: Any, *, minimum: builtins.int | None = None,
            maximum: builtins.int | None = 2**63 - 1) -> builtins.int:
        ...

    @overload
    def int(self, key: Any, default: _D, minimum: builtins.int | None = None,
            maximum: builtins.int | None = 2**63 - 1) -> builtins.int | _D:
        ...

    def int(self, key: Any, default: Any = _MISSING, minimum: builtins.int | None = None,
            maximum: builtins.int | None = 2**63 - 1) -> Any:
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

    def bool(self, key: Any, default: builtins.bool = _MISSING) -> builtins.bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(f"must be true or false, got {_kind(value)}", key)
        return value

    @overload
    def list(self, key: Any) -> builtins.list[Any]:
        ...

    @overload
    def list(self, key: Any, default: _D) -> builtins.list[Any] | _D:
        ...

    def list(self, key: Any, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not value:
            raise self.error(f"must be a non-empty list, got {_kind(value)}", key)
        return value

    def child(self, key: Any, required: builtins.bool = False) -> Fields:
        value = self.raw(key, _MISSING if required else None)
        return Fields(value, file=self.file, path=self.name(key),
                      parent_line=line_of(self.mapping, key))

    @overload
    def parse(self, key: Any, parser: Callable[[Any], _T]) -> _T:
        ...

    @overload
    def parse(self, key: Any, parser: Callable[[Any], _T], default: _D) -> _T | _D:
        ...

    def parse(self, key: Any, parser: Callable[[Any], Any], default: Any = _MISSING) -> Any:
        """Apply ``parser`` (which raises ValueError with a reason) to a value."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        try:
            return parser(value)
        except ValueError as exc:
            raise self.error(str(exc), key) from None

    def others_keys(self, told: Callable[[Any], builtins.str | None],
                    skip: Container[Any] = (), nothing: Container[Any] = (None, {})) -> None:
        """The keys not read yet (nor in ``skip``) that belong to another choice (another
        runner, another output format): ``told(key)`` says what its user is told, or None
        for a key no other choice takes (``done`` names those). Set to ``nothing`` such a
        key is taken as read, as nothing is set and nothing ignored; else it is refused."""
        for key, value in self.mapping.items():
            if key in self.seen or key in skip:
                continue
            message = told(key)
            if message is None:
                continue
            if value in nothing:
                self.seen.add(key)
                continue
            raise self.error(message, key)

    def done(self) -> None:
        unknown = [k for k in self.mapping if k not in self.seen]
        if unknown:
            key = unknown[0]
            allowed = ", ".join(sorted(str(k) for k in self.seen))
            raise self.error(f"unknown key {key!r} (allowed here: {allowed})", key)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
