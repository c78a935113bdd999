"""The kept server's bookkeeping (``streamslice.spark.local_server``) without a server: which
servers reads share, when one counts as idle, and what a killed task's lease counts for. The
servers themselves: tests/integration/test_local_server.py."""
import os
import subprocess
import sys
import time

from streamslice.spark.local_server import ServerSpec, _idle, alive, running


def test_reads_share_a_server_only_with_the_same_master_and_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMSLICE_LOCAL_SERVER_DIR", str(tmp_path))
    a = ServerSpec("local[*]", {"spark.sql.shuffle.partitions": "4"})
    assert a.folder() == ServerSpec("local[*]", {"spark.sql.shuffle.partitions": "4"},
                                    idle_s=5).folder()
    assert a.folder() != ServerSpec("local[2]", dict(a.conf)).folder()
    assert a.folder() != ServerSpec("local[*]", {"spark.sql.shuffle.partitions": "8"}).folder()
    assert a.folder().parent == tmp_path


def test_a_server_is_idle_once_unused_for_its_idle_time_and_no_live_task_holds_it(tmp_path):
    (tmp_path / "leases").mkdir()
    used = tmp_path / "used"
    used.touch()
    assert not _idle(tmp_path, 60)  # just used
    old = time.time() - 120
    os.utime(used, (old, old))
    assert _idle(tmp_path, 60)
    mine = tmp_path / "leases" / f"{os.getpid()}-a1b2c3d4"
    mine.touch()
    assert not _idle(tmp_path, 60)  # a read that runs longer than the idle time keeps it


def test_the_lease_of_a_killed_task_does_not_keep_the_server(tmp_path):
    (tmp_path / "leases").mkdir()
    used = tmp_path / "used"
    used.touch()
    os.utime(used, (time.time() - 120, time.time() - 120))
    task = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lease = tmp_path / "leases" / f"{task.pid}-a1b2c3d4"
    lease.touch()
    assert alive(task.pid) and not _idle(tmp_path, 60)
    task.kill()
    task.wait()
    assert not alive(task.pid)
    assert _idle(tmp_path, 60)
    assert not lease.exists()  # cleaned up


def test_a_server_file_naming_a_dead_keeper_is_removed(tmp_path):
    keeper = subprocess.Popen([sys.executable, "-c", "pass"])
    keeper.wait()
    (tmp_path / "server.json").write_text(f'{{"pid": {keeper.pid}, "port": 1}}')
    assert running(tmp_path) is None
    assert not (tmp_path / "server.json").exists()
    (tmp_path / "server.json").write_text("{not json")
    assert running(tmp_path) is None
