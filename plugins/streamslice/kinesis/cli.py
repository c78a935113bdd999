"""``streamslice efo list|sweep``: the Kinesis source's own commands
(``Source.add_cli_commands``)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..cli import emit, table
from ..errors import ConfigError
from .client import make_client
from .consumers import list_consumers, sweep
from .planner import stream_names

if TYPE_CHECKING:
    import argparse


def add_commands(commands: argparse._SubParsersAction[Any]) -> None:
    e = commands.add_parser("efo", help="Kinesis Enhanced Fan-Out consumers")
    esub = e.add_subparsers(dest="action", required=True)
    for name, fn in (("list", cmd_efo_list), ("sweep", cmd_efo_sweep)):
        c = esub.add_parser(name)
        c.add_argument("stream", help="stream name or ARN")
        c.add_argument("--region")
        c.add_argument("--endpoint-url")
        c.add_argument("--json", action="store_true")
        if name == "sweep":
            c.add_argument("--prefix", required=True, help="a pipeline's efo.consumer_name: "
                           "only its per-run consumers (<name>-<run hash>) are swept")
            c.add_argument("--older-than", default="1h")
        c.set_defaults(run=fn)


def _client(args: argparse.Namespace) -> Any:
    return make_client({"region": args.region or os.environ.get("AWS_DEFAULT_REGION"),
                        "endpoint_url": args.endpoint_url})


def cmd_efo_list(args: argparse.Namespace) -> None:
    client = _client(args)
    name, arn = stream_names(client, args.stream)
    consumers = list_consumers(client, arn)
    rows = [[c["ConsumerName"], c["ConsumerStatus"], c["ConsumerCreationTimestamp"],
             c["ConsumerARN"]] for c in consumers]
    emit(args, consumers, f"{name}: {len(consumers)} of 20 consumers\n" +
         table(["name", "status", "created", "arn"], rows))


def cmd_efo_sweep(args: argparse.Namespace) -> None:
    from ..timeutil import parse_duration_ms
    client = _client(args)
    _, arn = stream_names(client, args.stream)
    try:
        older = parse_duration_ms(args.older_than) / 1000
    except ValueError as exc:
        raise ConfigError(f"--older-than: {exc}") from None
    gone = sweep(client, arn, args.prefix, older)
    emit(args, gone, "\n".join(f"deregistered {n}" for n in gone) or "nothing to sweep")
