"""Development and test tooling: local services, data generators. Not shipped with the product."""
from __future__ import annotations
