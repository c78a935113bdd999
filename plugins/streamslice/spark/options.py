"""Data source options → ReadPlan. No PySpark imports: this is plain option parsing.

Either ``plan`` (a ReadPlan as JSON, as the Airflow DAG passes it) or a source's own options
(``Source.from_options``: Spark's Kafka option names for Kafka), plus the decoding options
every source shares: ``valueFormat``, ``keyFormat``, ``schema`` (JSON ``{"field": "type"}``)
and ``onDecodeError``.
"""
from __future__ import annotations

from ..config.options import client_properties, json_option
from ..errors import ConfigError
from ..planning.plan import ReadPlan

__all__ = ["client_properties", "plan_from_options"]


def plan_from_options(options: dict[str, str], kind: str) -> ReadPlan:
    from ..config.pipeline import Decoding
    from ..planning.planner import plan_run
    from ..sources import source_class
    opts = {k.lower(): v for k, v in options.items()}
    if "plan" in opts:
        try:
            return ReadPlan.from_json(opts["plan"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"option plan is not a streamslice ReadPlan: {exc}") from None
    source, props = source_class(kind).from_options(opts)
    schema = json_option(opts, "schema") if "schema" in opts else {}
    decode = Decoding(value=opts.get("valueformat", "json" if schema else "raw"),
                      key=opts.get("keyformat", "raw"), schema=tuple(schema.items()),
                      on_error=opts.get("ondecodeerror", "fail"))
    return plan_run(source, pipeline=opts.get("pipeline", "adhoc"), mode="bounded",
                    decode=decode, properties=props)
