"""The layers of docs/architecture.md ("Layers") hold for every import of the package, lazy ones
inside functions included: a module imports only its own layer or lower ones. A maintainer can then
change a layer knowing that nothing below it breaks, and the fast path (which imports lazily) cannot
pull a higher layer in through a side door. The walk is tests/test_import_graph.py's (ast, every
`import`, `from ... import`, relative or not, and `__import__` of a constant name)."""

from tests.test_import_graph import PACKAGE, graph

# Low to high. Modules directly under cudaswitch/ (errors, paths, safeio, run, pathsearch, toolkit,
# request, render, config, settings, envstate, tables, ...) and data/ are the base layer, 0.
LAYERS = {"registry": 1, "switch": 2, "verify": 3, "audit": 4, "install": 4, "integrations": 4,
          "commands": 5, "cli": 6}
ENTRY_POINT = "cudaswitch.__main__"  # `python -m cudaswitch`: the top, above cli/
BASE_PACKAGES = {"data"}


def layer(module: str) -> int:
    parts = module.split(".")
    if module == ENTRY_POINT:
        return max(LAYERS.values()) + 1
    if len(parts) == 1 or parts[1] not in LAYERS:
        return 0
    return LAYERS[parts[1]]


def upward(edges: dict) -> list:
    """'importer -> imported' for every import of a higher layer."""
    return sorted("%s -> %s" % (name, dep) for name, deps in edges.items() for dep in deps
                  if layer(dep) > layer(name))


def test_no_module_imports_a_higher_layer():
    assert upward(graph()) == []


def test_every_package_has_a_layer():
    """A new package is placed in the layers on purpose, not taken for a base module by default."""
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages <= set(LAYERS) | BASE_PACKAGES, sorted(packages - set(LAYERS) - BASE_PACKAGES)


def test_the_check_sees_an_upward_import():
    """It can fail: a base module importing cli/ and registry/ importing switch/ are both named,
    a command importing the registry is not."""
    edges = {"cudaswitch.render": {"cudaswitch.cli.tables"},
             "cudaswitch.registry.discover": {"cudaswitch.switch.envdiff", "cudaswitch.paths"},
             "cudaswitch.commands.registry_cmds": {"cudaswitch.registry.discover"}}
    assert upward(edges) == ["cudaswitch.registry.discover -> cudaswitch.switch.envdiff",
                             "cudaswitch.render -> cudaswitch.cli.tables"]
