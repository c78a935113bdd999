"""``devtools/alone.py`` (``make test-alone``) over small test files of its own: a file whose
second test needs what its first one left fails when each test runs alone, a test that fails
once and then passes is told apart as flaky, and the shuffled runs take pytest-random-order's
options. Real pytest processes, as the tool runs them."""
from __future__ import annotations

import re
from pathlib import Path

from devtools.alone import files_in, main, shares_state, targets
from tests.support.checks import present

ROOT = Path(__file__).resolve().parents[2]

ALONE = "def test_one():\n    assert 1 + 1 == 2\n"
# The second test passes only after the first: the module fixture's list is their state.
LEANING = '''import pytest

@pytest.fixture(scope="module")
def seen():
    return []

def test_first(seen):
    seen.append("first")

def test_second(seen):
    assert seen == ["first"]
'''
# Fails the first time, passes the next: as a test that gave up waiting on a busy machine.
FLAKY = '''from pathlib import Path

def test_once():
    mark = Path(__file__).with_suffix(".ran")
    ran = mark.exists()
    mark.touch()
    assert ran
'''


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def test_only_files_with_shared_state_run_test_by_test(tmp_path):
    folder = write(tmp_path / "t", test_alone=ALONE, test_leaning=LEANING)
    files = files_in([str(folder)])
    assert [f.name for f in files] == ["test_alone.py", "test_leaning.py"]
    assert [shares_state(f) for f in files] == [False, True]
    assert targets(files, each_test=False) == [
        str(files[0]), f"{files[1]}::test_first", f"{files[1]}::test_second"]
    assert targets(files[:1], each_test=True) == [f"{files[0]}::test_one"]


def test_shared_state_is_a_wider_fixture_a_global_or_a_cache(tmp_path):
    cases = {"test_class": '@pytest.fixture(scope="class")\n',
             "test_global": "def test_x():\n    global N\n",
             "test_cached": "@functools.lru_cache\ndef f(): ...\n",
             "test_plain": '@pytest.fixture\ndef f(): ...\nSCOPE = "module"\n'}
    folder = write(tmp_path / "t", **cases)
    assert {f.stem: shares_state(f) for f in files_in([str(folder)])} == {
        "test_cached": True, "test_class": True, "test_global": True, "test_plain": False}


def test_a_test_that_needs_an_earlier_one_fails_alone_and_is_named(tmp_path, capsys):
    folder = write(tmp_path / "t", test_alone=ALONE, test_leaning=LEANING)
    assert main([str(folder), "--by-file", "--logs", str(tmp_path / "logs")]) == 0
    assert main([str(folder), "--logs", str(tmp_path / "logs")]) == 1
    assert main([f"{folder}/test_leaning.py::test_first", "--logs", str(tmp_path / "l")]) == 0
    said = capsys.readouterr().out.splitlines()
    summary = said[said.index("3 runs: 2 passed, 0 flaky, 1 failed"):]
    assert summary[-1] == "1 runs: 1 passed, 0 flaky, 0 failed"
    assert summary[1].startswith(f"  FAILED {folder}/test_leaning.py::test_second  (log: ")
    assert re.search(r"FAILED .*test_leaning.py::test_second", summary[2]), summary


def test_a_test_that_passes_when_run_again_is_flaky(tmp_path, capsys):
    folder = write(tmp_path / "t", test_flaky=FLAKY)
    assert main([str(folder), "--logs", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert "1 runs: 0 passed, 1 flaky, 0 failed" in out
    assert f"FLAKY  {folder}/test_flaky.py" in out


def test_shuffled_runs_name_their_seed_and_shuffle_with_it(tmp_path, capsys):
    folder = write(tmp_path / "t", test_alone=ALONE)
    assert main([str(folder), "--shuffled", "2", "--logs", str(tmp_path / "logs")]) == 0
    seeds = re.findall(r"\] passed .*s seed (\d+)$", capsys.readouterr().out, re.M)
    assert len(seeds) == 2
    for seed in seeds:  # pytest-random-order took the options (pytest refuses unknown ones)
        log = (tmp_path / "logs" / f"seed_{seed}.log").read_text()
        assert f"--random-order-seed={seed} " in log and "1 passed" in log, log


def test_make_test_alone_is_documented_and_not_part_of_make_test():
    makefile = (ROOT / "Makefile").read_text()
    target = present(re.search(r"^test-alone:.*?\n((?:\t.*\n)+)", makefile, re.M)).group(1)
    assert "devtools.alone --shuffled" in target
    assert "devtools.alone tests/unit tests/integration tests/chaos" in target
    assert "test-alone" not in present(re.search(r"^test:(.*)$", makefile, re.M)).group(1)
    assert "make test-alone" in (ROOT / "docs" / "testing.md").read_text()
    pins = (ROOT / "requirements.txt").read_text() + (ROOT / "constraints.txt").read_text()
    assert pins.count("pytest-random-order==1.2.0") == 2
