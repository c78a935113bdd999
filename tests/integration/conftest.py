"""Fixtures only the integration tests use (the session's services are in tests/conftest.py)."""
import pytest

from tests.support.browser import launch

browser = pytest.fixture(scope="module")(launch)
