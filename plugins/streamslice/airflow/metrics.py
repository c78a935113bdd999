"""Run figures (``streamslice.monitoring.metrics``) sent through Airflow's own metrics, so they go
where the deployment's ``[metrics]`` section sends Airflow's: StatsD, OpenTelemetry or Datadog, with
its prefix, allow/block lists and name handler. Each figure is tagged with the pipeline and
its source; where tags are lost (plain StatsD) the name that carries the pipeline is sent too,
when Airflow sends its own such names (``[metrics] legacy_names_on``). Metrics never change a
run's outcome: trouble sending them is logged."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..monitoring.metrics import Figure

log = logging.getLogger("streamslice")


def emit(figures: list[Figure], pipeline: str, source: str) -> None:
    try:
        from airflow.sdk.configuration import conf
        from airflow.sdk.observability import stats
        tags = {"pipeline": pipeline, "source": source}
        with_names = conf.getboolean("metrics", "legacy_names_on", fallback=True)
        for figure in figures:
            named = [(figure.stat, tags)]
            if with_names:
                named.append((figure.stat_for(pipeline), {"source": source}))
            for stat, its_tags in named:
                if figure.kind == "count":
                    stats.incr(stat, int(figure.value), tags=its_tags)
                elif figure.kind == "gauge":
                    stats.gauge(stat, figure.value, tags=its_tags)
                else:
                    stats.timing(stat, figure.value, tags=its_tags)
    except Exception as exc:  # noqa: BLE001 - a metrics backend must not fail the run
        log.warning("sending streamslice metrics for %s failed: %s", pipeline, exc)
