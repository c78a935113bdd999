"""``streamslice efo list|sweep``: the Kinesis source's own commands
(``sources.HasCliCommands``). The CLI finds them through the registry and hands them a
``CommandKit`` (output, the pipelines, connections), so this module never imports the CLI.

STREAM may be a stream a pipeline reads, or that pipeline's name: then the command reaches
AWS as the pipeline does, through its connection (the resolver the tasks use). ``--conn-id``
names an AWS connection instead, and ``--region``/``--endpoint-url`` override either."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .client import make_client
from .consumers import list_consumers, sweep
from .planner import stream_names
from .source import KinesisSource

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ..sources import CommandKit, Properties



def add_commands(commands: argparse._SubParsersAction[Any], kit: CommandKit) -> None:
    e = commands.add_parser("efo", help="Kinesis Enhanced Fan-Out consumers")
    esub = e.add_subparsers(dest="action", required=True)
    for name, fn, about in (
            ("list", cmd_efo_list, "list the stream's Enhanced Fan-Out consumers"),
            ("sweep", cmd_efo_sweep, "deregister per-run consumers a pipeline left behind")):
        c = esub.add_parser(name, help=about)
        c.add_argument("stream", help="stream name or ARN, or a Kinesis pipeline's name")
        c.add_argument("--conn-id", help="an Airflow AWS connection (default: the connection "
                       "of the pipeline that reads STREAM, if one does)")
        c.add_argument("--region", help="the stream's AWS region (default: the pipeline's or "
                       "the connection's, else AWS_DEFAULT_REGION)")
        c.add_argument("--endpoint-url", help="another Kinesis endpoint (a local server)")
        c.add_argument("--json", action="store_true", help="print the result as JSON (for "
                       "scripts) instead of a table")
        if name == "sweep":
            c.add_argument("--prefix", required=True, help="a pipeline's efo.consumer_name: "
                           "only its per-run consumers (<name>-<run hash>) are swept")
            c.add_argument("--older-than", default="1h", help="sweep only consumers "
                           "registered longer ago than this (a duration: 90s, 30m, 1h)")
        c.set_defaults(run=_with(fn, kit))


def _with(fn: Callable[[argparse.Namespace, CommandKit], None],
          kit: CommandKit) -> Callable[[argparse.Namespace], None]:
    return lambda args: fn(args, kit)


def _client(args: argparse.Namespace, kit: CommandKit) -> Any:
    """A client as the pipeline that reads ``args.stream`` reaches AWS (or ``--conn-id``'s
    connection); ``args.stream`` becomes the stream's name when it named the pipeline."""
    props: Properties = {}
    if args.conn_id:
        props = kit.aws_properties(args.conn_id, args.region, "--conn-id")
    elif not (args.region or args.endpoint_url):
        source = _pipeline_source(args, kit)
        if source is not None and source.conn_id:
            props = kit.source_properties(source)
        elif source is not None:
            props = source.client_properties()
    given = {"region": args.region or props.get("region") or
             os.environ.get("AWS_DEFAULT_REGION"), "endpoint_url": args.endpoint_url}
    return make_client({**props, **{k: v for k, v in given.items() if v}})


def _pipeline_source(args: argparse.Namespace, kit: CommandKit) -> KinesisSource | None:
    """The Kinesis source of the pipeline named ``args.stream``, or of the one pipeline that
    reads that stream; None when no pipeline (or no pipelines folder) says."""
    try:
        configs = kit.pipelines(args)
    except ConfigError:
        return None
    kinesis = [(c.name, c.source) for c in configs if isinstance(c.source, KinesisSource)]
    named = [s for name, s in kinesis if name == args.stream]
    reading = named or [s for _, s in kinesis if args.stream in s.streams]
    if len(reading) != 1:
        return None
    if named and len(reading[0].streams) == 1:
        args.stream = reading[0].streams[0]
    return reading[0]


def cmd_efo_list(args: argparse.Namespace, kit: CommandKit) -> None:
    client = _client(args, kit)
    name, arn = stream_names(client, args.stream)
    consumers = list_consumers(client, arn)
    rows = [[c["ConsumerName"], c["ConsumerStatus"], c["ConsumerCreationTimestamp"],
             c["ConsumerARN"]] for c in consumers]
    kit.emit(args, consumers, f"{name}: {len(consumers)} of 20 consumers\n" +
             kit.table(["name", "status", "created", "arn"], rows))


def cmd_efo_sweep(args: argparse.Namespace, kit: CommandKit) -> None:
    from ..timestamps import parse_duration_ms
    client = _client(args, kit)
    _, arn = stream_names(client, args.stream)
    try:
        older = parse_duration_ms(args.older_than) / 1000
    except ValueError as exc:
        raise ConfigError(f"--older-than: {exc}") from None
    gone = sweep(client, arn, args.prefix, older)
    kit.emit(args, gone, "\n".join(f"deregistered {n}" for n in gone) or "nothing to sweep")
