"""Secrets (passwords, AWS keys, tokens) stay out of plans, XCom, manifests, logs and the
Spark job's arguments and options.

A read's client properties are split in two: the public ones travel as they always did (Spark
options, ``--properties``); the secret ones (``aws.auth.SECRET_KEYS``) are written by the
runner to a private file (mode 0600 in a 0700 folder, removed after the read) that only
Spark processes on that machine — or, with spark-submit, the executors Spark hands it to
(``--files``) — can read; the public properties name it (``secrets_file``: a path, not a
secret) and the executor merges it in where it builds its client. A Spark Connect server and
EMR Serverless get no secrets at all: they read with their own identity (``ambient``).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..aws.auth import is_secret

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from ..sources import Properties, PropertyValue

SECRETS_FILE = "secrets_file"


def split_secrets(properties: Properties) -> tuple[Properties, Properties]:
    """(public, secret) client properties."""
    public = {k: v for k, v in properties.items() if not is_secret(k)}
    return public, {k: v for k, v in properties.items() if is_secret(k)}


@contextmanager
def private_file(secrets: Properties) -> Iterator[str | None]:
    """A file holding ``secrets`` that only this user can read, for as long as the block
    runs; None when there are none."""
    if not secrets:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="streamslice-secrets-")  # mode 0700
    path = os.path.join(folder, "secrets.json")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(secrets, f)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def with_secrets(properties: Mapping[str, PropertyValue],
                 locate: Callable[[str], str | None] | None = None) -> Properties:
    """The properties an executor builds its client from: ``secrets_file``'s content merged
    in. ``locate(name)`` finds a file Spark shipped (spark-submit ``--files``) where the path
    is not on this machine."""
    if not properties.get(SECRETS_FILE):
        return dict(properties)
    path = str(properties[SECRETS_FILE])
    out = {k: v for k, v in properties.items() if k != SECRETS_FILE}
    if not os.path.exists(path) and locate is not None:
        path = locate(os.path.basename(path)) or path
    try:
        with open(path) as f:
            out.update(json.load(f))
    except OSError as exc:
        from ..errors import ConfigError
        raise ConfigError(f"the read's private credentials file is not readable here "
                          f"({exc.strerror}): the Spark processes must run as the same user, "
                          "or get their own credentials") from None
    return out
