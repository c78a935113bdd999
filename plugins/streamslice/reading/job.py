"""The read job's arguments, one way for every launcher (in-process, spark-submit, EMR
Serverless): where the plan is, where to stage, where the client properties are (a file, never
the command line: they may hold secrets) and the source's read options."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sources import Properties


@dataclass(frozen=True)
class ReadJob:
    plan: str  # a path or URI of the ReadPlan JSON ("-": stdin)
    staging: str  # staging URI of this attempt
    properties: str | None = None  # a path or URI of the client properties JSON
    options: dict[str, Any] = field(default_factory=dict)  # Source.read_options

    def argv(self) -> list[str]:
        out = ["--plan", self.plan, "--staging", self.staging]
        if self.properties:
            out += ["--properties", self.properties]
        if self.options:
            out += ["--options", json.dumps(self.options, sort_keys=True)]
        return out

    @classmethod
    def from_argv(cls, argv: list[str] | None = None) -> tuple[ReadJob, argparse.Namespace]:
        ap = argparse.ArgumentParser(
            description="Read one streamslice ReadPlan into a staging area.")
        ap.add_argument("--plan", required=True, help="ReadPlan JSON file or URI ('-': stdin)")
        ap.add_argument("--staging", required=True, help="staging URI of this attempt")
        ap.add_argument("--properties", help="JSON file or URI of client properties")
        ap.add_argument("--options", default="{}", help="JSON read options of the source")
        ap.add_argument("--master", default=None, help="used when not under spark-submit")
        ap.add_argument("--verbose", action="store_true",
                        help="keep Spark's own error logs (the job reports its error itself)")
        args = ap.parse_args(argv)
        return cls(args.plan, args.staging, args.properties, json.loads(args.options)), args

    def load_plan_text(self) -> str:
        return read_text(self.plan)

    def load_properties(self) -> Properties:
        if not self.properties:
            return {}
        data: Properties = json.loads(read_text(self.properties))
        return data


def read_text(path: str) -> str:
    """A local file, '-' for stdin, or a URI (s3://…) as EMR Serverless runs pass them."""
    if path == "-":
        return sys.stdin.read()
    if "://" in path:
        import pyarrow.fs as pafs
        fs, inner = pafs.FileSystem.from_uri(path)
        with fs.open_input_stream(inner) as f:
            return bytes(f.read()).decode()
    with open(path) as f:
        return f.read()
