"""``raw``: the bytes as they are, in a ``binary`` column (Spark's Kafka ``value``/``key``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from . import BaseFormat, Decoded

if TYPE_CHECKING:
    from collections.abc import Sequence


class Raw(BaseFormat):
    name = "raw"

    def fields(self, column: str) -> list[pa.Field]:
        return [pa.field(column, pa.binary())]

    def decode(self, items: Sequence[bytes | None]) -> Decoded:
        return [pa.array(items, pa.binary())], {}
