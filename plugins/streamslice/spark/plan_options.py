"""Data source options → ReadPlan. No PySpark imports: this is plain option parsing.

Either ``plan`` (a ReadPlan as JSON, as the Airflow DAG passes it: it stays fixed, which is how
a DAG run reads exactly what it planned) or a source's own options (``Source.from_options``:
Spark's Kafka option names for Kafka), plus the decoding options every source shares:
``valueFormat``, ``keyFormat``, ``schema`` and ``keySchema`` (Spark DDL, or JSON
``{"field": "type"}``), ``flatten``, and Spark's ``mode`` and ``columnNameOfCorruptRecord``
(``parse_mode``: what a DataFrame read does with a record that does not decode; ``onDecodeError``
is the older name). Option names are checked strictly: a misspelt one would silently read
another range, so it fails naming the closest known option.
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from ..config.data_source_options import client_properties
from ..errors import ConfigError, PlanError, PlanVersionError

if TYPE_CHECKING:
    from ..config.pipeline import Decoding
    from ..planning.plan import ReadPlan
    from ..reading.malformed import ParseMode

__all__ = ["client_properties", "plan_from_options", "check_names"]

DECODING = ("valueFormat", "keyFormat", "schema", "keySchema", "onDecodeError", "flatten",
            "avroSchema", "keyAvroSchema", "schemaRegistryKind", "schemaRegistryName",
            "subject", "schemaVersion", "keySubject", "keySchemaVersion", "descFilePath",
            "messageName", "keyDescFilePath", "keyMessageName", "epochUnit", "keyEpochUnit",
            "mode", "columnNameOfCorruptRecord")
REGISTRY_PREFIX = "schema.registry."  # a schema registry's client properties
INTERNAL = ("plan", "staging", "readOptions", "injectFault", "pipeline")


def check_names(opts: dict[str, str], kind: str, known: tuple[str, ...], prefix: str) -> None:
    names = {n.lower(): n for n in (*known, *DECODING, *INTERNAL)}
    for key in opts:
        if key in names or key.startswith((prefix, REGISTRY_PREFIX)):
            continue
        close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
        hint = f" (did you mean {names[close[0]]}?)" if close else ""
        raise ConfigError(f"unknown option {key!r} for streamslice-{kind}{hint}; options are "
                          f"{', '.join(sorted(known))}, {', '.join(DECODING)} and "
                          f"{prefix}* client properties")


def plan_from_options(options: dict[str, str], kind: str) -> ReadPlan[Any]:
    from ..planning.planner import plan_run
    from ..sources import read_plan, source_class
    opts = {k.lower(): v for k, v in options.items()}
    if "plan" in opts:
        try:
            return read_plan(opts["plan"])
        except PlanVersionError:
            raise
        except (PlanError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"option plan is not a streamslice ReadPlan: {exc}") from None
    cls = source_class(kind)
    check_names(opts, kind, cls.options, cls.option_prefix)
    source, props = cls.from_options(opts)
    decode = decoding_from_options(opts)
    props = {**props, **{k: v for k, v in opts.items() if k.startswith(REGISTRY_PREFIX)}}
    return plan_run(source, pipeline=opts.get("pipeline", "adhoc"), mode="bounded",
                    decode=decode, properties=props)


def decoding_from_options(opts: dict[str, str]) -> Decoding:
    """The decoding options every source shares (keys lower-cased): ``valueFormat``,
    ``keyFormat``, ``schema`` and ``keySchema`` (Spark DDL or a JSON object of field → type:
    a json value's or key's fields), the formats' own,
    ``onDecodeError`` and ``flatten`` (``false``: a record in one struct column ``value``)."""
    from ..config.pipeline import Decoding
    from ..formats import format_class, formats_for
    value = _choice(opts, "valueFormat", formats_for("value"),
                    "json" if "schema" in opts else "raw")
    key = _choice(opts, "keyFormat", formats_for("key"),
                  "json" if "keyschema" in opts else "raw")
    return Decoding(value=format_class(value).from_options(opts, "value"),
                    key=format_class(key).from_options(opts, "key"),
                    on_error=_choice(opts, "onDecodeError", ("fail", "dead_letter"), "fail"),
                    flatten=_choice({k: v.lower() for k, v in opts.items()}, "flatten",
                                    ("true", "false"), "true") == "true")


def parse_mode(options: dict[str, str], plan: ReadPlan[Any]) -> ParseMode:
    """Spark's ``mode`` (any case, as Spark's ``ParseMode.fromString``) and
    ``columnNameOfCorruptRecord``. ``onDecodeError``, the older option, maps onto it: ``fail``
    is ``FAILFAST``, ``dead_letter`` ``PERMISSIVE`` (the record stays, as a corrupt row: a
    DataFrame read has no dead-letter files). Without either, a ``plan`` says it by its
    ``on_error``; else ``PERMISSIVE``, Spark's default."""
    from ..reading.malformed import DEFAULT_COLUMN, ParseMode
    opts = {k.lower(): v for k, v in options.items()}
    mode, older = opts.get("mode"), opts.get("ondecodeerror")
    if mode is not None and older is not None:
        raise ConfigError("options mode and onDecodeError say the same thing: give mode "
                          "(onDecodeError fail is mode FAILFAST, dead_letter is PERMISSIVE)")
    if mode is None:
        on_error = older if older is not None else \
            (plan.decode or {}).get("on_error", "dead_letter") if "plan" in opts else "dead_letter"
        if on_error not in ("fail", "dead_letter"):
            raise ConfigError(f"option onDecodeError: {on_error!r} is not one of: fail, "
                              "dead_letter")
        mode = "FAILFAST" if on_error == "fail" else "PERMISSIVE"
    return ParseMode(mode.upper(), opts.get("columnnameofcorruptrecord", DEFAULT_COLUMN))


def _choice(opts: dict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = opts.get(name.lower(), default)
    if value not in allowed:
        raise ConfigError(f"option {name}: {value!r} is not one of: {', '.join(allowed)}")
    return value

