"""What a test expects to be there: ``present(store.get()).positions`` fails with an
AssertionError at that line where the package's type says "or None" (no checkpoint yet, no
manifest, a regex without a match, a query without a row), where ``.positions`` on None would
fail with an AttributeError further from the point."""
from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, asserted not None."""
    assert value is not None, "expected a value, got None"
    return value
