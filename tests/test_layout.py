"""The package's shape: no import cycles (function-level imports included), no measurement ids in
code paths, and the light import path of the command lines."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "kvmath"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):  # every import, at any depth
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    dep = target if target in modules else base
                    if dep in modules and dep != mod:
                        graph[mod].add(dep)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and alias.name != mod:
                        graph[mod].add(alias.name)
    return graph


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    # a package's __init__ importing its own submodules is not a cycle unless a submodule imports it back
    assert not cycles, cycles


# GGML's own type names (F16, F32, ...) look like measurement ids; a string that is exactly one is a type
GGML_TYPE_NAMES = {t.name for t in __import__("gguf").GGMLQuantizationType}


def test_no_measurement_ids_in_code_paths():
    # boots are cited from data/measurements, never by id in a string the package's code builds
    # (docstrings may name the boots a rule was checked on)
    hits = []
    for p in PKG.rglob("*.py"):
        tree = ast.parse(p.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs \
                    and n.value not in GGML_TYPE_NAMES \
                    and re.search(r"(?<![A-Za-z0-9_])[CF][0-9]{2}(?![A-Za-z0-9_])", n.value):
                hits.append(f"{p.relative_to(PKG.parent)}:{n.lineno}: {n.value[:60]!r}")
    assert not hits, hits


def test_command_lines_import_no_book_libraries():
    code = ("import sys, kvmath.cli, kvmath.engines.vllm.cli, kvmath.engines.vllm.budget; "
            "print(sorted(m for m in ('pandas', 'altair', 'ipywidgets', 'numpy', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
