"""The nevers of the layout (DESIGN.md), held on the package's import graph and file reads.

- an engine imports no other engine (each is one subpackage + one registry line);
- the model side (kvmath/model) imports no engine;
- nothing in the package reads tests/ or climbs out of itself (a wheel has neither);
- only kvmath/facts.py reads the data folder.
Imports are read from the source (AST), function-level ones included, relative ones resolved.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import kvmath
from kvmath.engines import REGISTRY

PKG = Path(kvmath.__file__).resolve().parent
ENGINE_PKGS = {entry[0] for entry in REGISTRY.values()}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts)


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def _engine_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) >= 3 and parts[:2] == ["kvmath", "engines"] and parts[2] in ENGINE_PKGS:
        return parts[2]
    return None


GRAPH = {module: (path, _imports(path, module)) for path, module in _modules()}


def test_the_graph_is_read():
    # the test reads something: the vLLM engine imports its own alloc, the CLI the engines' registry
    assert "kvmath.engines.vllm.alloc" in GRAPH["kvmath.engines.vllm"][1]
    assert len(GRAPH) > 40


def test_an_engine_imports_no_other_engine():
    bad = []
    for module, (_, imports) in GRAPH.items():
        own = _engine_of(module)
        if own is None:
            continue
        for name in imports:
            other = _engine_of(name)
            if other is not None and other != own:
                bad.append(f"{module} imports {name}")
    assert not bad, bad


def test_the_model_side_imports_no_engine():
    bad = [f"{m} imports {n}" for m, (_, imps) in GRAPH.items() if m.startswith("kvmath.model")
           for n in imps if n.startswith("kvmath.engines")]
    assert not bad, bad


def _strings(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            yield node


def test_nothing_reads_tests_or_climbs_out():
    bad = []
    for module, (path, _) in GRAPH.items():
        for node in _strings(path):
            if isinstance(node, ast.Subscript):
                bad.append(f"{module}:{node.lineno} climbs out with Path.parents[...]")
            elif node.value.startswith(("tests/", "tests\\", "../")) or "/tests/" in node.value:
                bad.append(f"{module}:{node.lineno} names {node.value[:40]!r}")
    assert not bad, bad


def test_only_facts_reads_the_data_folder():
    bad = []
    for module, (path, imports) in GRAPH.items():
        if module == "kvmath.facts":
            continue
        src = path.read_text(encoding="utf-8")
        if re.search(r"(?<!user_)data_dir\(", src) or "kvmath.data" in imports or "importlib.resources" in src:
            bad.append(module)
    assert not bad, bad


# --- a cache kind is named in few places; no function is long (issue 18) -----------------------------------------

def _names_in(path: Path) -> set[str]:
    """Identifiers and attribute names the code uses (comments and strings do not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.ClassDef):
            out.add(node.name)
    return out


def test_a_cache_kind_is_named_in_at_most_six_package_files():
    from kvmath.model.specs import LAYER_KINDS

    names = {path: _names_in(path) for path, _ in _modules()}
    where = {cls.__name__: sorted(str(p.relative_to(PKG)) for p, n in names.items() if cls.__name__ in n)
             for cls in LAYER_KINDS}
    assert where["GatedDeltaNetLayer"], "the scan reads the code: the HF reader builds GDN layers"
    assert {k: v for k, v in where.items() if len(v) > 6} == {}


def test_each_engine_dispatches_by_the_specs_kind():
    # Engine.rules is keyed by a spec's ``kind``; every kind an engine keys exists, and the kinds are distinct
    from kvmath.engines import ENGINES
    from kvmath.model.specs import LAYER_KINDS

    kinds = [cls.kind for cls in LAYER_KINDS]
    assert len(set(kinds)) == len(kinds)
    from kvmath.engines.llamacpp.memory import LLAMACPP_KINDS
    from kvmath.engines.vllm.rules import KINDS as VLLM_KINDS

    for engine in ENGINES.values():
        assert set(engine.rules) <= set(kinds), engine.name
    assert ENGINES["transformers"].rules and set(ENGINES["transformers"].rules) == set(kinds)
    assert set(VLLM_KINDS) < set(kinds) and set(LLAMACPP_KINDS) < set(kinds)


def test_no_function_in_the_package_is_longer_than_120_lines():
    long = []
    for path, module in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 120:
                long.append(f"{module}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert len(GRAPH) > 40 and long == [], long
