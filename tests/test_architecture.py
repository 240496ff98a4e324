"""The layout's rules, checked on the source: imports go app -> db -> mvp_core, never back, no cycles,
no module-level `__getattr__` (docs/ARCHITECTURE.md, "Direction of imports")."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"mvp_core": 0, "db": 1, "app": 2}


def _modules() -> dict[str, Path]:
    out = {}
    for top in LAYERS:
        for p in (ROOT / top).rglob("*.py"):
            if "migrations" in p.parts:
                continue
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def _imports(path: Path, name: str, modules: dict) -> set[str]:
    """Project modules this file imports (top level or inside functions)."""
    found = set()
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            cands = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            cands = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for c in cands:
            while c and c not in modules:
                c = c.rpartition(".")[0]
            if c:
                found.add(c)
    found.discard(name)
    return found


def test_imports_point_down_the_layers():
    modules = _modules()
    bad = []
    for name, path in modules.items():
        layer = LAYERS[name.split(".")[0]]
        for dep in _imports(path, name, modules):
            if LAYERS[dep.split(".")[0]] > layer:
                bad.append(f"{name} imports {dep}")
    assert not bad, "imports against the direction app -> db -> mvp_core:\n" + "\n".join(sorted(bad))


def test_no_import_cycles():
    modules = _modules()
    graph = {n: _imports(p, n, modules) for n, p in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph[n]):
            if state.get(d) == 1:
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_module_getattr_tricks():
    hits = [str(p.relative_to(ROOT)) for p in _modules().values()
            if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in ast.parse(p.read_text()).body)]
    assert not hits, f"module-level __getattr__ in {hits}"
