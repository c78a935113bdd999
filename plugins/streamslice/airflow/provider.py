"""Provider metadata, found by Airflow through the ``apache_airflow_provider`` entry point as
it finds its own providers' (``airflow providers list`` shows streamslice and its version).

Airflow imports this in every component at start-up, so it imports nothing: the dict names
classes by their dotted paths and Airflow imports them when it needs them. The UI page is
registered through the ``airflow.plugins`` entry point instead (not here too: a plugin
registered twice is reported as an import error)."""
from __future__ import annotations

from typing import TypedDict

from .. import __version__

# What Airflow reads of a provider's info (its provider.yaml's keys).
ProviderInfo = TypedDict("ProviderInfo", {"package-name": str, "name": str, "description": str,
                                          "versions": list[str], "notifications": list[str]})


def get_provider_info() -> ProviderInfo:
    return {
        "package-name": "streamslice",
        "name": "streamslice",
        "description": "Bounded, exactly-once slices of Kafka topics and Kinesis streams, "
                       "scheduled by Airflow and read by Spark.",
        "versions": [__version__],
        "notifications": ["streamslice.airflow.alerting.FailureAlert"],
    }
