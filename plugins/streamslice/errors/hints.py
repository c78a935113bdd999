"""One line for every failure a ``streamslice`` command meets: what is missing and how to fix
it. A traceback says where the code stopped; a user needs to know which Airflow home, which
connection, which service, and what to run. ``--debug`` (or ``STREAMSLICE_DEBUG=1``) prints
the traceback as well.

Airflow's, SQLAlchemy's and botocore's errors are recognised by their class names, so the
core package imports none of them."""
from __future__ import annotations

import os
from dataclasses import dataclass

from . import SourceError, StreamsliceError


@dataclass(frozen=True)
class Where:
    """What a command ran against, for the hints: the Airflow home, and whether it came from
    the demo's ``.demo/env`` (then the demo's services are what a command could not reach)."""
    airflow_home: str | None
    demo: bool = False

    @property
    def home(self) -> str:
        return self.airflow_home or "~/airflow (AIRFLOW_HOME is not set)"

    @property
    def services(self) -> str:
        return "; the demo's services run under `make services`" if self.demo else ""


def explain(exc: BaseException, where: Where) -> str:
    """``exc`` as one line for a user."""
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    modules = {type(e).__module__.split(".")[0] for e in chain}
    if isinstance(exc, StreamsliceError):  # a source that failed may be a service not running
        return one_line(str(exc)) + (where.services if isinstance(exc, SourceError) else "")
    if isinstance(exc, LookupError) and not modules & {"sqlalchemy", "botocore", "airflow"}:
        return one_line(str(exc))
    if "sqlalchemy" in modules:
        return _database(exc, where)
    if "AirflowNotFoundException" in names:
        return (f"{_first(exc)} (AIRFLOW_HOME={where.home}): define it with `airflow "
                "connections add CONN_ID --conn-type TYPE …` or the environment variable "
                "AIRFLOW_CONN_<CONN_ID>")
    if "NoRegionError" in names:
        return ("no AWS region: pass --region, set AWS_DEFAULT_REGION, or --conn-id an Airflow "
                "AWS connection with region_name in its extra")
    if "NoCredentialsError" in names:
        return ("no AWS credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile, "
                "or --conn-id an Airflow AWS connection")
    if names & {"EndpointConnectionError", "ConnectTimeoutError", "ConnectionRefusedError",
                "ConnectionError"}:
        return f"cannot reach {_first(exc)}{where.services}"
    if isinstance(exc, ImportError):
        return (f"{_first(exc)}: this command needs Apache Airflow and the streamslice "
                "plugin's dependencies installed in this Python")
    return f"{type(exc).__name__}: {_first(exc)} (--debug shows the traceback)"


def _database(exc: BaseException, where: Where) -> str:
    """SQLAlchemy's errors are Airflow's metadata database: missing, unmigrated, unreachable."""
    orig = getattr(exc, "orig", None) or exc
    reason = _first(orig)
    fix = ("run `airflow db migrate` with that AIRFLOW_HOME, or set AIRFLOW_HOME to the home "
           "your Airflow uses")
    if "no such table" in reason or "does not exist" in reason:
        return (f"Airflow's metadata database for AIRFLOW_HOME={where.home} is not set up "
                f"({reason}): {fix}")
    if "unable to open database" in reason or "could not connect" in reason or \
            "Connection refused" in reason:
        return f"cannot open Airflow's metadata database for AIRFLOW_HOME={where.home} " \
               f"({reason}): {fix}"
    return f"Airflow's metadata database for AIRFLOW_HOME={where.home}: {reason}"


def one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _first(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def debug_requested(flag: bool) -> bool:
    return flag or os.environ.get("STREAMSLICE_DEBUG", "").lower() not in ("", "0", "false")
