"""Typed, versioned records: what one step or process writes and another reads back (a split's
summary, a manifest, a run's metrics, the checkpoint, a recorded alert).

They are read the way plans are (``planning.plan``), because they outlive the release that
wrote them just as plans do (a manifest on disk, a checkpoint in asset state, an asset event in
Airflow's database): a record of this version is read exactly (a field this release does not
know, a required one missing or one of the wrong type is a ``RecordError`` naming it); an older
one is migrated step by step (its ``RecordKind.migrations``); a newer one is refused
(``RecordVersionError``). Records from before versions existed carry no ``version``: they are
version 1, the shape each record had then. Changing what a record means bumps its kind's
``version`` and adds the step from the previous one.

A record is a dataclass with a ``version`` field and a ``KIND``; ``Versioned`` gives it its one
``to_dict``/``from_dict``. Types are checked by msgspec (a core dependency already), so a field
written as text where a number belongs is an error here, not a wrong figure later.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar

import msgspec

from .errors import RecordError, RecordVersionError

R = TypeVar("R", bound="Versioned")
# What JSON holds: a record's (or a plan's) JSON before it is read into its dataclass.
JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
JsonObject = dict[str, JsonValue]

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    # A record's JSON of one version → the same record's JSON of the next
    Migration = Callable[[JsonObject], JsonObject]

UNVERSIONED = 1  # the version of a record written before records carried one


@dataclass(frozen=True)
class RecordKind:
    name: str  # what errors call it: "checkpoint", "manifest", …
    version: int  # the version this release writes
    # version → the function turning a record of that version into one of the next
    migrations: Mapping[int, Migration] = field(default_factory=dict)

    def oldest_readable(self) -> int:
        version = self.version
        while version - 1 in self.migrations:
            version -= 1
        return version

    def readable(self) -> str:
        oldest = self.oldest_readable()
        return f"{oldest} to {self.version}" if oldest < self.version else str(self.version)

    def migrate(self, data: JsonObject, version: int) -> JsonObject:
        """``data``, of a readable ``version``, stepped up to ``self.version``."""
        while version < self.version:
            data = self.migrations[version](data)
            version += 1
            data["version"] = version
        return data


class Versioned:
    """A record dataclass's encode/decode: ``to_dict`` is its JSON (with ``version``),
    ``from_dict`` reads one of any readable version back."""

    KIND: ClassVar[RecordKind]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return data

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        return decode(cls, data)


def upgrade(data: object, kind: RecordKind) -> JsonObject:
    """``data`` (a record's JSON) as a record of ``kind.version``, or RecordVersionError."""
    if not isinstance(data, dict):
        raise RecordError(f"{kind.name} must be a JSON object, got {type(data).__name__}")
    data = dict(data)
    version = data.get("version", UNVERSIONED)
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordError(f"{kind.name} has no valid version ({version!r}): it was not "
                          "written by streamslice")
    if version > kind.version:
        raise RecordVersionError(
            f"{kind.name} version {version} was written by a newer streamslice; this one "
            f"reads {kind.name} versions {kind.readable()}. Read it where that release is "
            "installed, or upgrade streamslice here")
    if version < kind.oldest_readable():
        raise RecordVersionError(
            f"{kind.name} version {version} is too old for this streamslice (it reads "
            f"versions {kind.readable()}): no migration from it exists")
    migrated = kind.migrate(data, version)
    migrated["version"] = kind.version
    return migrated


def decode(cls: type[R], data: Any) -> R:
    """A record of ``cls`` from its JSON, migrated to this release's version first."""
    kind = cls.KIND
    data = upgrade(data, kind)
    known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise RecordError(f"{kind.name}: unknown field {unknown[0]!r} for {kind.name} version "
                          f"{kind.version} (fields: {', '.join(known)})")
    try:
        record: R = msgspec.convert(data, cls, strict=True)
    except msgspec.ValidationError as exc:
        raise RecordError(f"{kind.name} version {kind.version}: {exc}") from None
    return record
