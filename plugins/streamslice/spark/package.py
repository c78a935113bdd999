"""The code Spark's Python workers run, for every runner, taken from wherever this package is
imported from: the installed package (site-packages, from the wheel) or a checkout's
``plugins/``. A local session's workers use the driver's interpreter, so they import the same
files; spark-submit (``--py-files``) and EMR Serverless get the package as a zip of its
sources; a Spark Connect server gets that zip as an artifact (``connect``). The job script
spark-submit runs is a two-line launcher of ``streamslice.spark.bounded_read``, written next
to the zip, so nothing here needs a checkout's ``jobs/`` folder."""
from __future__ import annotations

import os
import site
import sysconfig
import zipfile
from pathlib import Path

import streamslice

# The folder that holds the ``streamslice`` package (site-packages, or a checkout's plugins/).
PACKAGE_ROOT = Path(os.path.abspath(streamslice.__file__)).parent.parent

# spark-submit's (and EMR Serverless') entry point: the package comes with --py-files.
LAUNCHER = '''"""The streamslice read job (the package ships with --py-files)."""
import sys

from streamslice.spark.bounded_read import main

sys.exit(main())
'''


def package_files() -> list[Path]:
    """The package's Python sources, in a stable order."""
    return sorted(PACKAGE_ROOT.joinpath("streamslice").rglob("*.py"))


def write_zip(target: Path) -> Path:
    """``streamslice`` as a zip for ``--py-files``, ``spark.submit.pyFiles`` or an artifact."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path in package_files():
            z.write(path, path.relative_to(PACKAGE_ROOT))
    return target


def write_launcher(target: Path) -> Path:
    target.write_text(LAUNCHER)
    return target


def installed() -> bool:
    """Whether the package is in this interpreter's own site-packages (a wheel or an editable
    install's source folder does not count), so every process of that interpreter imports it
    without help."""
    roots = {*site.getsitepackages(), sysconfig.get_paths()["purelib"]}
    return any(os.path.abspath(r) == str(PACKAGE_ROOT) for r in roots)
