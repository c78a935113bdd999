"""The house's shape, held by tests (``docs/extending.md``): a source is one package plus one
registration line, and works through the roles of the split Source contract
(``sources.Planner``, ``ReaderFactory``, ``SplitSerializer``) and only the capabilities it
claims; the core (``plugins/streamslice`` outside ``airflow/`` and ``spark/``) imports neither
Airflow nor PySpark; no module imports another that imports it back at module level.

The import graph is read from the source with ``ast``, not by importing: an import under
``if TYPE_CHECKING:`` is for the type checker only and is left out; one inside a function runs
only when the function does and counts for the layering rule, not for cycles."""
from __future__ import annotations

import ast
import inspect
import json
import time
import typing
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import streamslice
from streamslice import sources
from streamslice.sources import SOURCES, source_class

PACKAGE = Path(streamslice.__file__).parent
GLUE = ("streamslice.airflow", "streamslice.spark")
FOREIGN = ("airflow", "pyspark")
# What may import the glue inside a function, when it runs: the CLI, the application, whose
# commands that read Airflow's metadata database (offsets, backfill, freshness) need it; and
# the runners, whose ``run`` starts the read job through the Spark or Airflow glue (so
# validating a pipeline needs neither), as their docstrings say.
LAZY_GLUE_ALLOWED = ("streamslice.cli", "streamslice.runners")
COUNTER = "tests.support.counter.source:CounterSource"


# -- the import graph ------------------------------------------------------------------------
def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


class _Imports(ast.NodeVisitor):
    """(imported module, at module level) for each runtime import of one module."""

    def __init__(self, name: str, is_package: bool) -> None:
        self.package = name if is_package else name.rpartition(".")[0]
        self.found: list[tuple[str, bool]] = []
        self.depth = 0

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(alias.name, self.depth == 0) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parent = self.package.split(".")
            parent = parent[:len(parent) - node.level + 1]
            base = ".".join(parent + ([node.module] if node.module else []))
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self.found.append((sub if sub in MODULES else base, self.depth == 0))


def imports_of(name: str) -> list[tuple[str, bool]]:
    path = MODULES[name]
    visitor = _Imports(name, path.name == "__init__.py")
    visitor.visit(ast.parse(path.read_text(), str(path)))
    return visitor.found


GRAPH = {name: imports_of(name) for name in MODULES}


def module_level(name: str) -> set[str]:
    """What importing ``name`` imports at once: its module-level imports, and the packages
    an imported module is in (their ``__init__`` runs first)."""
    out = set()
    for target, top in GRAPH[name]:
        if not top:
            continue
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix != name and not name.startswith(prefix + "."):
                out.add(prefix)
    return out


def loads(name: str) -> set[str]:
    """Every module importing ``name`` loads, following streamslice's own imports."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        for target in module_level(current) - seen:
            seen.add(target)
            if target in MODULES:
                todo.append(target)
    return seen


CORE = sorted(n for n in MODULES if not _under(n, GLUE))


def test_the_graph_reads_the_package():
    """The graph sees what it must: the glue imports Airflow and PySpark at module level, a
    TYPE_CHECKING import is left out, a function's import is not module level."""
    assert len(CORE) > 100
    assert "airflow.sdk" in loads("streamslice.airflow.hooks")
    assert "pyspark" in {n.split(".")[0] for n in loads("streamslice.spark.datasource")}
    assert ("streamslice.config.pipeline", True) not in GRAPH["streamslice.cli"]
    assert ("streamslice.airflow.checkpoint_store", False) in GRAPH["streamslice.cli"]


@pytest.mark.parametrize("name", CORE)
def test_the_core_imports_neither_airflow_nor_pyspark(name):
    """Importing a core module loads no Airflow, no PySpark and none of our glue for them;
    no core module imports them later either, except the CLI's commands that need Airflow."""
    loaded = loads(name)
    assert sorted(n for n in loaded if _under(n, FOREIGN + GLUE)) == []
    if not _under(name, LAZY_GLUE_ALLOWED):
        lazy = [t for t, top in GRAPH[name] if not top and _under(t, FOREIGN + GLUE)]
        assert lazy == []


def test_no_module_imports_itself_back_at_module_level():
    """No cycle of module-level imports (Tarjan's strongly connected components): a cycle
    works only in the order Python happens to import it, and breaks when that changes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(module_level(node) & MODULES.keys()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(MODULES):
        if name not in index:
            visit(name)
    assert cycles == []


# -- the roles -------------------------------------------------------------------------------
# One pipeline block per registered source: parsed, never connected to.
BLOCKS = {
    "kafka": "kafka: {bootstrap_servers: 'localhost:9', topics: [t]}",
    "kinesis": "kinesis: {stream: s, region: us-east-1, reader: efo, "
               "efo: {consumer_name: c}}",
    "files": "files: {path: /tmp}",
    "counter": "counter: {partitions: 2, upto: 3}",
}
CAPABILITIES = (sources.Connected, sources.HasLifecycleTasks, sources.HasPageSections,
                sources.HasCliCommands, sources.CommitListener)


@pytest.fixture
def counter(monkeypatch):
    """The one line that adds the test's own source."""
    monkeypatch.setitem(SOURCES, "counter", COUNTER)
    return "counter"


def configured(kind, output="/tmp/out"):
    from streamslice.config import parse_pipeline
    return parse_pipeline(f"mode: incremental\n{BLOCKS[kind]}\noutput: {{path: '{output}'}}\n")


def members(protocol: type) -> set[str]:
    return {n for n in vars(protocol) if not n.startswith("_")} | \
        set(getattr(protocol, "__annotations__", {}))


def split_type(cls: type, role: type) -> str:
    """The split type ``cls`` fills ``role``'s parameter with, by name."""
    for base in getattr(cls, "__orig_bases__", ()):
        if typing.get_origin(base) is role:
            (arg,) = typing.get_args(base)
            return getattr(arg, "__forward_arg__", getattr(arg, "__name__", str(arg)))
    return split_type(cls.__bases__[0], role)


def test_every_registered_source_is_covered_here():
    assert set(BLOCKS) - {"counter"} == set(SOURCES)


@pytest.mark.parametrize("kind", sorted(BLOCKS))
def test_every_source_implements_each_role_it_claims(kind, counter):
    """Each source has the three roles, each of the same split type, none abstract; and a
    capability it has a member of, it has whole, with the protocol's parameters (a half
    capability would be skipped by the glue's isinstance, silently)."""
    cls = source_class(kind)
    source = configured(kind).source
    assert isinstance(source, cls) and not inspect.isabstract(cls)
    roles = {sources.Planner: source.planner(), sources.ReaderFactory: cls.readers(),
             sources.SplitSerializer: cls.serializer()}
    want = split_type(cls, sources.Source)
    for role, made in roles.items():
        assert isinstance(made, role) and not inspect.isabstract(type(made)), role
        assert split_type(type(made), role) == want, role
    readers = roles[sources.ReaderFactory]
    assert isinstance(readers, sources.ReaderFactory)
    assert isinstance(readers.verify_columns, tuple)
    claimed = []
    for protocol in CAPABILITIES:
        has = {m for m in members(protocol) if hasattr(cls, m)}
        if not has:
            continue
        claimed.append(protocol.__name__)
        assert has == members(protocol), protocol.__name__
        holder = cls if protocol is sources.HasCliCommands else source
        assert isinstance(holder, protocol), protocol.__name__
        for name in has:
            ours, theirs = getattr(holder, name), getattr(protocol, name, None)
            if callable(theirs):
                expected = list(inspect.signature(theirs).parameters)[1:]
                assert list(inspect.signature(ours).parameters) == expected, name
    assert claimed == {"kafka": ["Connected", "CommitListener"],
                       "kinesis": ["Connected", "HasLifecycleTasks", "HasPageSections",
                                   "HasCliCommands"],
                       "files": [], "counter": []}[kind]


def test_a_source_is_one_package_and_one_registration_line(counter, tmp_path):
    """tests/support/counter is a source nothing in the package knows: registered by one
    line, a pipeline file takes its block, and it plans, serializes, reads, verifies,
    publishes and checkpoints through the roles as the built-in sources do."""
    from streamslice.commit.checkpoint import advance
    from streamslice.commit.protocol import publish_once, staging_for
    from streamslice.commit.publishers import staged_constants
    from streamslice.planning.planner import plan_run
    from streamslice.reading.decode import Decoder
    from streamslice.reading.sink import ParquetSink
    from streamslice.sources import ReadRequest, lag_unit, position_text, read_plan, split_noun
    from tests.support.counter.source import CounterSplit

    assert not any("CounterSource" in p.read_text() or "support.counter" in p.read_text()
                   for p in PACKAGE.rglob("*.py"))  # nothing in the package names it
    cfg = configured(counter, tmp_path / "lake")

    def run(checkpoint, run_id):
        planned = plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                           output=cfg.output.target(cfg.name), checkpoint=checkpoint,
                           run_id=run_id)
        plan = read_plan(json.loads(planned.to_json()))  # as a retry or an executor has it
        assert plan == planned and all(type(s) is CounterSplit for s in plan.splits)
        readers, staging = source_class(plan.source).readers(), staging_for(plan, "try1")
        request = ReadRequest(plan=plan, properties={}, decoder=Decoder.from_dict(plan.decode),
                              staging=staging)
        for split in plan.splits:
            reader = readers.open_reader(split, request)
            reader.sink = ParquetSink(staging, split.id, readers.record_schema(request.decoder,
                                                                               plan),
                                      "snappy", constants=staged_constants(plan),
                                      keep_empty=split is plan.splits[0])
            assert list(reader.batches()) == []
        now = int(time.time() * 1000)
        manifest = publish_once(plan, staging, run_id=run_id, now_ms=now)
        positions = readers.next_positions(plan, {s.split: s for s in manifest.splits},
                                           checkpoint.positions if checkpoint else {})
        return manifest, advance(checkpoint, plan, now_ms=now, run_id=run_id,
                                 positions=positions)

    manifest, checkpoint = run(None, "r1")
    assert manifest.records == 6 and checkpoint.positions == {"c:0": 3, "c:1": 3}
    rows = [r for f in sorted(Path(manifest.published["uri"]).glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()]
    assert sorted((r["partition"], r["n"], r["value"]) for r in rows) == \
        [(f"c:{p}", n, str(n).encode()) for p in (0, 1) for n in range(3)]  # raw bytes
    manifest, again = run(checkpoint, "r2")  # from the checkpoint: nothing new
    assert manifest.records == 0 and again.positions == checkpoint.positions
    assert (position_text(counter, 3).full, split_noun(counter), lag_unit(counter)) == \
        ("3", ("partition", "partitions"), "records")
    assert cfg.source.planner().reset_positions("earliest", {}).positions == \
        {"c:0": 0, "c:1": 0}
