"""docs/cli.md, made from the ``streamslice`` argument parser so the reference cannot drift
from the command line: every command, argument, default and help text comes from
``streamslice.cli.parser()``; only the words around them are written here.
``python -m devtools.cli_reference`` rewrites the page; tests/unit/test_docs.py fails while
the committed page differs from what this makes."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamslice.cli import leaf_parsers, parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
COMMON = ("help", "dir", "debug")  # every command's; listed once, at the top

HEAD = """\
# Command line reference

<!-- Generated from the argument parser by `python -m devtools.cli_reference`: edit the
parser's help texts (or that script's words around them), not this page. -->

`streamslice` comes with the package ([Install](install.md)). Tables for people by default,
`--json` for scripts; every error is one line on stderr (`--debug`, or
`STREAMSLICE_DEBUG=1`, prints the traceback too). Commands that read Airflow's metadata
database (`offsets`, `backfill`, `freshness`, and `plan` of an incremental pipeline or one
naming a connection) use the Airflow of `AIRFLOW_HOME`, as the `airflow` command does.

```
streamslice validate
streamslice plan orders --at 2024-05-01T00:30:00Z
streamslice backfill orders --from 2024-05-01T01:00:00Z --to 2024-05-01T03:00:00Z --unpause
```

## Every command

| option | default | meaning |
|---|---|---|
{common}

`--dir` and `--debug` go before the command or after it (`streamslice validate --dir
PATH`). Without `--dir` the pipeline files are looked for in `$STREAMSLICE_PIPELINES`, then
`./dags/pipelines`, then the `pipelines` folder of Airflow's DAGs folder
(`$AIRFLOW__CORE__DAGS_FOLDER`, else `$AIRFLOW_HOME/dags`, else `~/airflow/dags`), where
`streamslice init` writes it. Every variable the package reads:
[Environment variables](environment.md).

Times (`--at`, `--from`, `--to`) are ISO-8601 (`2024-05-01T01:00:00Z`; without a zone,
UTC) or epoch seconds or milliseconds. The backfill's `--to` is **exclusive**: the
intervals that overlap `[--from, --to)` run. Airflow's own `airflow backfill create
--to-date` is inclusive of the run dated at it, so `--from-date 01:00 --to-date 02:00` runs
the hours 01:00 and 02:00 where `--from 01:00 --to 02:00` here runs only 01:00.

## Exit codes

| code | when |
|---|---|
| 0 | the command did what it says |
| 1 | an error (one line on stderr); `validate`: a file does not validate; `backfill`: a \
run failed; `freshness`: a pipeline file does not load |
| 2 | the command line does not parse (argparse's usage message) |
| 3 | `freshness`: a pipeline is stale |
| 130 | interrupted (Ctrl-C) |
"""


def render() -> str:
    top = parser()
    common = [a for a in top._actions if a.dest in COMMON[1:]]
    out = [HEAD.format(common="\n".join(_row(a) for a in common))]
    for path, p in _commands(top):
        out.append(f"\n## streamslice {' '.join(path)}\n\n")
        if p.description:
            out.append(f"{p.description}\n\n")
        out.append(f"```\nusage: {_usage(path, p)}\n```\n")
        rows = [_row(a) for a in p._actions if a.dest not in COMMON]
        if rows:
            out.append("\n| argument | default | meaning |\n|---|---|---|\n" + "\n".join(rows)
                       + "\n")
    return "".join(out)


Command = tuple[tuple[str, ...], argparse.ArgumentParser]


def _commands(top: argparse.ArgumentParser) -> list[Command]:
    """(words, parser) of every command that runs (``offsets reset``, not ``offsets``), in
    the parser's order, each with the help its parent gave it as its description."""
    found: list[Command] = []

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and path:
            found.append((path, p))
        for action in subs:
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, child in action.choices.items():
                child.description = child.description or _sentence(helps.get(name))
                walk(child, (*path, name))
    walk(top, ())
    assert {id(p) for _, p in found} <= {id(p) for p in leaf_parsers(top)}
    return found


def _sentence(text: str | None) -> str | None:
    return f"{text[0].upper()}{text[1:]}." if text else None


def _usage(path: tuple[str, ...], p: argparse.ArgumentParser) -> str:
    grouped = {id(a): g for g in p._mutually_exclusive_groups for a in g._group_actions}
    words, done = ["streamslice", *path], set()
    for a in p._actions:
        if a.dest in COMMON or id(a) in done:
            continue
        group = grouped.get(id(a))
        if group is not None:
            done |= {id(x) for x in group._group_actions}
            either = " | ".join(_word(x) for x in group._group_actions)
            words.append(f"({either})" if group.required else f"[{either}]")
        elif a.option_strings and not a.required:
            words.append(f"[{_word(a)}]")
        else:
            words.append(_word(a))
    return " ".join(words)


def _word(a: argparse.Action) -> str:
    if not a.option_strings:
        name = str(a.metavar or a.dest).upper()
        return f"[{name}]" if a.nargs == "?" else name
    flag = a.option_strings[-1]
    if a.nargs == 0:
        return flag
    return f"{flag} {a.metavar or a.dest.upper()!s}"


def _row(a: argparse.Action) -> str:
    name = " / ".join(f"`{o}`" for o in a.option_strings) or f"`{_word(a)}`"
    if a.nargs == 0:
        default = "off"
    elif a.required or (not a.option_strings and a.nargs is None):
        default = "required"
    elif a.default in (None, argparse.SUPPRESS):
        default = ""
    else:
        default = f"`{a.default}`"
    meaning = (a.help or "").replace("|", "\\|")
    if a.choices:
        meaning += f" (one of: {', '.join(f'`{c}`' for c in a.choices)})"
    return f"| {name} | {default} | {meaning.strip()} |"


def main() -> int:
    PAGE.write_text(render())
    print(f"wrote {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
