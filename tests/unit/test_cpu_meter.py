"""The CPU meter bench/backfill.py says where a backfill's CPU went with (devtools/cpu_meter.py)
counts real processes as docs/performance.md says: a short-lived process in full through its
parent's reaped CPU, even one born and ended between two samples; once, when it and its parent
end together; and at its last sample one whose CPU reaches no counted process (its parent
ignores SIGCHLD, or it is matched by its command line and its parent is not counted)."""
import subprocess
import sys

from devtools.cpu_meter import CpuMeter, Root
from tests.support.checks import present
from tests.support.wait import wait_for

BURN = 0.4  # CPU s each leaf burns
# root -> mid -> leaf on each line the root reads; a "hold" leaf waits for a line of its own
TREE = f"""
import subprocess, sys, time
role = sys.argv[1]
if role == "root":
    print("ready", flush=True)
    while line := sys.stdin.readline().strip():
        subprocess.run([sys.executable, __file__, "mid", line])
        print("done", flush=True)
elif role == "mid":
    subprocess.run([sys.executable, __file__, "leaf", sys.argv[2]])
else:
    end = time.process_time() + {BURN}
    while time.process_time() < end:
        pass
    if sys.argv[2] == "hold":
        print("burnt", flush=True)
        sys.stdin.readline()
"""


class Tree:
    """The TREE processes, its root ignoring SIGCHLD (as pyspark's daemon does) if asked:
    then the kernel reaps its children and adds their CPU to no parent's."""

    def __init__(self, folder, ignore=False):
        script = folder / "tree.py"
        script.write_text(TREE)
        self.root = subprocess.Popen(
            [sys.executable, "-c", "import signal, runpy, sys; signal.signal(signal.SIGCHLD, "
             f"signal.{'SIG_IGN' if ignore else 'SIG_DFL'}); sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')", str(script), "root"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.stdin, self.stdout = present(self.root.stdin), present(self.root.stdout)
        assert self.stdout.readline() == "ready\n"
        # the thread never samples: only the snapshots the test asks for
        self.meter = CpuMeter({self.root.pid: Root("root", "tree")}, every=3600).start()

    def say(self, line, answer):
        self.stdin.write(line + "\n")
        self.stdin.flush()
        assert self.stdout.readline() == answer + "\n"

    def hold(self):
        """A leaf that the meter sees alive with its CPU, and that then ends with its parent
        between two samples: the CPU each of the tree's components used meanwhile."""
        before = self.meter.snapshot()
        self.say("hold", "burnt")
        self.meter.snapshot()
        self.say("end", "done")
        return self.meter.since(before)

    def close(self):
        self.stdin.close()
        self.root.wait(30)
        self.meter.stop()


def test_a_tree_is_counted_in_full_and_once(tmp_path):
    tree = Tree(tmp_path)
    try:
        before = tree.meter.snapshot()  # mid and leaf start and end before the next sample
        tree.say("go", "done")
        used = tree.meter.since(before)
        assert BURN <= used.components["tree"] < 1.5 * BURN + 0.1  # + two starts of Python
        assert used.components["root"] < 0.2

        used = tree.hold()
        assert BURN <= used.components["tree"] < 1.5 * BURN + 0.1  # not twice
        assert used.machine >= used.components["tree"] - 0.1
    finally:
        tree.close()


def test_children_the_kernel_reaps_count_at_their_last_sample(tmp_path):
    tree = Tree(tmp_path, ignore=True)
    try:
        used = tree.hold()
        assert BURN <= used.components["tree"] < 1.5 * BURN + 0.1
    finally:
        tree.close()


def test_a_process_no_counted_process_reaps_counts_at_its_last_sample():
    meter = CpuMeter({}, every=0.05,
                     match=lambda cmdline: "probe" if "cpu-meter-probe" in cmdline else None)
    meter.start()
    before = meter.snapshot()
    probe = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time\nend = time.process_time() + {BURN}\n"
         "while time.process_time() < end: pass\nsys.stdin.readline()", "cpu-meter-probe"],
        stdin=subprocess.PIPE)
    try:
        wait_for(lambda: meter.snapshot().components.get("probe", 0) - before.components.get(
            "probe", 0) >= BURN, 60, "the probe's CPU to be sampled")
    finally:
        probe.communicate(b"\n", timeout=30)  # its parent, this test, is not counted
    used = meter.since(before)
    meter.stop()
    assert BURN <= used.components["probe"] < BURN + 0.2
    assert "probe" not in {c.own for c in meter._counted.values()}  # ended, not still live
