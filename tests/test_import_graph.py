"""The package's import graph has no circle. Every import counts, also the ones inside functions
(the fast path imports lazily, and a lazy circle still ties two modules together). A small AST walk
over cudaswitch/, then Tarjan's strongly connected components: any component of two or more
modules is a circle, named in the failure."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cudaswitch"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set) -> set:
    """Project modules that `path` imports (a `from pkg import name` counts name when it is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node.module, node.level)
            found.add(base)
            found.update("%s.%s" % (base, alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    me = module_name(path)
    return {name for name in found if name in modules and name != me}


def _absolute(path: Path, module, level: int) -> str:
    """The absolute name a `from ..x import y` in `path` means (level 0: `module` itself)."""
    if level == 0:
        return module
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    package = package[:len(package) - (level - 1)]
    return ".".join(package + ([module] if module else []))


def graph() -> dict:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    edges = {name: imports_of(path, modules) for name, path in files.items()}
    for name in modules:  # importing a.b.c runs a/__init__ and a/b/__init__ first: not a circle of ours
        edges[name] = {dep for dep in edges[name] if not name.startswith(dep + ".")}
    return edges


def circles(edges: dict) -> list:
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in edges[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_a_real_edge(tmp_path):
    edges = graph()
    assert "cudaswitch.cli.table" in edges["cudaswitch.cli.main"]
    assert _absolute(PACKAGE / "switch" / "plan.py", "verify", 2) == "cudaswitch.verify"
    assert _absolute(PACKAGE / "switch" / "__init__.py", None, 1) == "cudaswitch.switch"
    assert circles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_circle_between_the_packages_modules():
    assert circles(graph()) == []
