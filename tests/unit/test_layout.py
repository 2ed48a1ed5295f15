"""The layout shows the pipeline: the core never imports the tools built on it (resolver/tools/)."""
from __future__ import annotations

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "resolver")
#: the front doors may run a tool (the command line runs lint, matrix, diff and --batch)
FRONT_DOORS = {"cli.py", "commands.py", "__main__.py"}


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
    assert tools == {"lint", "sweep", "matrix", "diff", "batch", "docgen", "jobs", "checks_report"}
