"""How ``make test`` lays the suite out over pytest-xdist workers (tests/conftest.py), as
docs/development.md says: the Airflow-component tests run first, as one group, and their
services stop after the last of them; an integration module is one group; a run that xdist
does not group stops at once. The items, nodes and services here are stand-ins (our own
hooks' logic only); the full run exercises the real thing."""
from types import SimpleNamespace

import pytest

from tests.conftest import (
    _AIRFLOW,
    _worker_group,
    pytest_collection_modifyitems,
    pytest_runtest_teardown,
    pytest_xdist_node_collection_finished,
)


def item(nodeid, airflow=False, config=None, marker=None):
    """A stand-in test item; its ``funcargs`` are empty, as a skipped test's are."""
    names = ["airflow_services", "airflow"] if airflow else ["broker"]
    return SimpleNamespace(nodeid=nodeid, fixturenames=names, config=config, funcargs={},
                           get_closest_marker=lambda name: name if name == marker else None)


def test_airflow_tests_first_and_each_in_its_group():
    items = [item("tests/unit/test_a.py::test_one"),
             item("tests/integration/test_b.py::test_two"),
             item("tests/integration/test_c.py::test_backfill", airflow=True),
             item("tests/chaos/test_d.py::test_kill"),
             item("tests/chaos/test_e.py::test_retry", airflow=True),
             item("tests/integration/test_f.py::test_celery", marker="deploy")]
    # (without xdist: its marker is known only where it is loaded; the groups are its names)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(hasplugin=lambda name: False))
    pytest_collection_modifyitems(None, config, items)
    assert [i.nodeid.split("::")[1] for i in items] == [
        "test_backfill", "test_retry", "test_celery", "test_one", "test_two", "test_kill"]
    assert [_worker_group(i) for i in items] == [
        "airflow", "airflow", "tests/integration/test_f.py", "tests/unit/test_a.py::test_one",
        "tests/integration/test_b.py", "tests/chaos/test_d.py::test_kill"]


def test_the_airflow_services_stop_after_the_last_test_on_them():
    # The services are found in the session's stash, so they stop after the last test on
    # them even when that test was skipped (it never got its fixture arguments).
    stopped = []
    config = SimpleNamespace(stash=pytest.Stash())
    config.stash[_AIRFLOW] = SimpleNamespace(stop=lambda: stopped.append(True))
    first, last = (item(f"tests/integration/test_c.py::t{n}", True, config) for n in (1, 2))
    other = item("tests/unit/test_a.py::test_one", config=config)
    pytest_runtest_teardown(first, last)
    assert stopped == []
    pytest_runtest_teardown(last, other)
    assert stopped == [True]
    pytest_runtest_teardown(last, None)  # the last test of the session
    assert stopped == [True, True]
    pytest_runtest_teardown(other, None)
    assert stopped == [True, True]


def node(dist):
    return SimpleNamespace(config=SimpleNamespace(getvalue=lambda name: dist))


def test_an_ungrouped_run_stops_at_once():
    with pytest.raises(pytest.UsageError, match="does not group these tests"):
        pytest_xdist_node_collection_finished(node("loadgroup"), ["tests/x.py::t"])
    pytest_xdist_node_collection_finished(node("loadgroup"), ["tests/x.py::t@tests/x.py"])
    pytest_xdist_node_collection_finished(node("load"), ["tests/x.py::t"])
