"""The package's imports (#32): no module-level import cycle, and no function-local import
that only hides one. A module imported inside a function must not import the importing module
back (at module level, directly or through others), so it could as well be imported at the
top: a function-local import is for what a process may not need (PySpark, Airflow, a heavy
library, a runner or source it does not use), never to dodge a cycle. The graph is read from
the source (``if TYPE_CHECKING:`` blocks left out, as they never run)."""
from __future__ import annotations

import ast
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
# The one left: the Kinesis source's ``efo`` commands import the CLI, which imports the
# sources (the CLI finding source commands itself is the other half of #32 item 3).
KNOWN = {("streamslice.kinesis.source", "streamslice.kinesis.cli")}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PLUGINS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in (PLUGINS / "streamslice").rglob("*.py")}


def _targets(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The package's modules an import statement loads (``from . import x``: x if it is a
    module, else the package)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    base = module.split(".")
    if not MODULES[module].name == "__init__.py":
        base = base[:-1]
    if node.level:
        base = base[:len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    found = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix
             for a in node.names]
    return [t for t in found if t in MODULES]


def _imports() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """Module-level edges, and (module, target, line) of each function-local import."""
    top: dict[str, set[str]] = {m: set() for m in MODULES}
    local: list[tuple[str, str, int]] = []

    def visit(module: str, body: list[ast.stmt], in_function: bool) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, node):
                    if in_function:
                        local.append((module, target, node.lineno))
                    else:
                        top[module].add(target)
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(node, field, None)
                if isinstance(sub, list):
                    visit(module, sub, inner)

    for module, path in MODULES.items():
        visit(module, ast.parse(path.read_text()).body, False)
    return top, local


def _path(top: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A chain of module-level imports from ``start`` to ``goal``, if there is one."""
    seen, stack = {start}, [[start]]
    while stack:
        chain = stack.pop()
        for nxt in sorted(top[chain[-1]]):
            if nxt == goal:
                return [*chain, nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append([*chain, nxt])
    return None


def test_no_module_level_import_cycle():
    top, _ = _imports()
    cycles = [" → ".join(chain) for m in sorted(MODULES)
              for chain in [_path(top, m, m)] if chain]
    assert cycles == []


def test_no_function_local_import_hides_a_cycle():
    top, local = _imports()
    hidden = [f"{module}:{line} imports {target}, which imports it back: "
              + " → ".join(chain)
              for module, target, line in local if (module, target) not in KNOWN
              for chain in [_path(top, target, module)] if chain]
    assert hidden == []


def test_the_check_sees_a_hidden_cycle():
    """The rule finds one: the runner modules import their glue inside ``run``; if the
    glue imported the runner module back at its top, that import would hide a cycle."""
    top, local = _imports()
    assert ("streamslice.runners.emr_serverless", "streamslice.airflow.emr") in \
        {(m, t) for m, t, _ in local}
    top["streamslice.airflow.emr"].add("streamslice.runners.emr_serverless")
    assert _path(top, "streamslice.airflow.emr", "streamslice.runners.emr_serverless")
