"""The layout shows the pipeline: the package's imports form no circle (so none runs back up), the core never
imports the tools built on it (resolver/tools/), and the renderers import nothing that resolves.

Every import counts: at the top of a module, inside a function, and under ``TYPE_CHECKING`` (a circle a lazy
import hides is still a circle: the two modules cannot be understood, or moved, one without the other)."""
from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "resolver")
#: the front doors may run a tool (the command line runs lint, matrix, diff and --batch)
FRONT_DOORS = {"cli.py", "commands.py", "argv.py", "cross_node_command.py", "__main__.py"}
#: the renderers: words and lines from a resolution's data; none may resolve (re-running a resolution to draw
#: an answer is the core's work, done before the answer reaches them)
RENDERERS = ("resolver.explain", "resolver.launch_line", "resolver.verdicts", "resolver.wording", "resolver.terminal")
#: the modules that resolve: run the engine, search fixes or re-resolve what-ifs
RESOLVING = {"resolver.core", "resolver.api", "resolver.resolution", "resolver.fixes", "resolver.whatif",
             "resolver.engine", "resolver.compiler", "resolver.crossnode", "resolver.pack_cache"}


def _imports(path: str) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _modules() -> dict[str, str]:
    """module name -> file, for every module of the package (a package is its ``__init__``)."""
    root = os.path.dirname(PACKAGE)
    out = {}
    for folder, _dirs, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), root)[:-3].split(os.sep)
                out[".".join(rel[:-1] if rel[-1] == "__init__" else rel)] = os.path.join(folder, f)
    return out


def _graph() -> dict[str, set[str]]:
    """module -> the modules of the package it imports (``from .x import y`` counts y when y is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        targets = set()
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            bases: list[tuple[str, list[str]]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                bases.append((base, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                bases += [(a.name, []) for a in node.names]
            for base, names in bases:
                subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
                targets.update(subs)
                if base in modules and (not subs or len(subs) < len(names)):
                    targets.add(base)
        graph[name] = targets - {name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_no_import_circle():
    graph = _graph()
    circles = _circles(graph)
    assert not circles, "import circles: " + "; ".join(
        " <-> ".join(c) + " (" + ", ".join(f"{a} -> {b}" for a in c for b in sorted(graph[a]) if b in c) + ")"
        for c in circles)


def test_the_circle_check_sees_a_lazy_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_the_graph_reads_relative_and_function_level_imports():
    graph = _graph()
    assert "resolver.resolution" in graph["resolver.core"]  # from .resolution import ...
    assert "resolver.adapters.registry" in graph["resolver.core"]  # from .adapters import registry
    assert "resolver.tools.batch" in graph["resolver.cli"]  # a function-level import


@pytest.mark.parametrize("renderer", RENDERERS)
def test_renderers_import_nothing_that_resolves(renderer):
    reached = _reach(_graph(), renderer)
    assert not reached & RESOLVING, sorted(reached & RESOLVING)


CORE = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py") and f not in FRONT_DOORS)


@pytest.mark.parametrize("module", CORE)
def test_the_core_never_imports_a_tool(module):
    used = _imports(os.path.join(PACKAGE, module))
    assert not {m for m in used if m.startswith((".tools", "resolver.tools"))}, used


def test_the_check_sees_a_tool_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from .tools.lint import lint\n")
    assert ".tools.lint" in _imports(str(bad))


def test_the_tools_are_where_the_readme_says():
    tools = {f[:-3] for f in os.listdir(os.path.join(PACKAGE, "tools")) if f.endswith(".py") and f != "__init__.py"}
    assert tools == {"lint", "sweep", "matrix", "diff", "batch", "docgen", "checks_report"}
