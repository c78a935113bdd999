"""The suite's Spark drivers start on a class-data-sharing archive (``devtools.spark_cds``).
A JVM given ``-Xshare:on`` refuses to start when it cannot map the archive (another Java,
other jars, a class path that does not match the one it was made from), so a session that
starts with it proves Spark's driver uses the archive rather than silently ignoring it."""
import subprocess
import sys

import pytest

from devtools.spark_cds import QUICK_JVM, java_options
from tests.conftest import ROOT

pytestmark = pytest.mark.integration

SESSION = """
import sys
from streamslice.spark.session import spark_session
spark = spark_session(conf={"spark.driver.extraJavaOptions": sys.argv[1]})
print(spark.range(5).count())
"""


def _start(options):
    return subprocess.run([sys.executable, "-c", SESSION, options], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_a_spark_driver_maps_the_class_archive():
    options = java_options(QUICK_JVM)
    assert "-XX:SharedArchiveFile=" in options, "no class archive could be made here"
    out = _start(options + " -Xshare:on")
    assert out.returncode == 0 and out.stdout.strip().endswith("5"), out.stderr[-3000:]


def test_a_driver_that_cannot_map_it_refuses_to_start_under_xshare_on(tmp_path):
    # the control: the check above can fail (a file that is no archive)
    (tmp_path / "bad.jsa").write_bytes(b"not an archive")
    out = _start(f"{QUICK_JVM} -XX:SharedArchiveFile={tmp_path / 'bad.jsa'} -Xshare:on")
    assert out.returncode != 0 and "shared archive" in out.stdout + out.stderr, out.stderr
