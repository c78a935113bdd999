"""The example DAG files of dags/ as modules, for tests that call their functions."""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from tests.conftest import ROOT

if TYPE_CHECKING:
    from types import ModuleType


def example(name: str) -> ModuleType:
    """``dags/<name>.py`` imported as the DAG processor would (dags/ on the path)."""
    sys.path.insert(0, str(ROOT / "dags"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "dags"))
