"""The package's extras (``pip install 'streamslice-VERSION-py3-none-any.whl[kafka,avro]'``:
streamslice is on no package index, its wheel is built from the repository) and the modules
each one brings. The core imports an extra's modules only where that capability is used, and a
pipeline file that needs an extra which is not installed fails validation naming the extra
and the command that installs it, not with an ImportError from deep inside a run."""
from __future__ import annotations

import importlib.util

from ..errors import ConfigError

# extra -> the top-level modules it installs (pyproject.toml's optional-dependencies)
EXTRAS: dict[str, tuple[str, ...]] = {
    "kafka": ("confluent_kafka", "kafka"),
    "kinesis": ("boto3",),
    "aws": ("boto3",),
    "avro": ("fastavro",),
    "protobuf": ("google.protobuf",),
    "registry": ("confluent_kafka.schema_registry", "authlib", "boto3"),
    "iceberg": ("pyiceberg",),
    "delta": ("deltalake",),
    "msk-iam": ("aws_msk_iam_sasl_signer", "boto3"),
    "spark": ("pyspark",),
    "amazon": ("airflow.providers.amazon",),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    gone = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # its parent package is missing
            found = False
        if not found:
            gone.append(module)
    return gone


def missing_message(extra: str, needed_for: str) -> str | None:
    """What to tell a user whose ``needed_for`` needs ``extra`` (None: it is installed)."""
    gone = missing_modules(extra)
    if not gone:
        return None
    return (f"{needed_for} needs the streamslice[{extra}] extra, which is not installed (no "
            f"module {', '.join(gone)}): install the wheel built from the streamslice "
            f"repository with it, pip install '{wheel_name()}[{extra}]'")


def wheel_name() -> str:
    """The file ``python -m build`` makes of this version (the package is on no index)."""
    from .. import __version__
    return f"streamslice-{__version__}-py3-none-any.whl"


def require(extra: str, needed_for: str) -> None:
    """A ConfigError naming ``extra`` and how to install it, when any of its modules is
    missing."""
    message = missing_message(extra, needed_for)
    if message:
        raise ConfigError(message)
