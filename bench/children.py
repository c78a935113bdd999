"""Benchmark children: each measured reader runs in a process of its own
(``<script> --child KIND JSON``) and times its own read after its imports; the parent also
takes the whole process's CPU from the OS (``wait4``)."""
import json
import os
import resource
import subprocess
import sys


def cpu_now():
    """CPU seconds (user + system) this process has used so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_child(script, kind, args):
    """The child's own result (a JSON list) followed by its whole-process CPU seconds."""
    proc = subprocess.Popen([sys.executable, script, "--child", kind, json.dumps(args)],
                            stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise RuntimeError(f"{kind} child failed ({status})")
    return (*json.loads(out), usage.ru_utime + usage.ru_stime)


def serve_child(child, functions):
    """In the child: run ``functions[kind](args)`` and print its result for the parent."""
    kind, args = child
    print(json.dumps(functions[kind](json.loads(args))))
