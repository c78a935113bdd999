"""``string``: UTF-8 text in a ``string`` column; bytes that are not UTF-8 are dead letters."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from . import BaseFormat, Decoded

if TYPE_CHECKING:
    from collections.abc import Sequence


class String(BaseFormat):
    name = "string"

    def fields(self, column: str) -> list[pa.Field]:
        return [pa.field(column, pa.string())]

    def decode(self, items: Sequence[bytes | None]) -> Decoded:
        """The whole batch is checked in C; only a batch with bad text is gone through
        record by record, to name them."""
        binary = pa.array(items, pa.binary())
        text = binary.view(pa.string())
        try:
            text.validate(full=True)
            return [text], {}
        except pa.ArrowInvalid:
            pass
        errors: dict[int, str] = {}
        out: list[str | None] = []
        for row, raw in enumerate(items):
            if raw is None:
                out.append(None)
                continue
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                errors[row] = f"{self.role} is not valid UTF-8 at byte {exc.start}"
                out.append(None)
        return [pa.array(out, pa.string())], errors
