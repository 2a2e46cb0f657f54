"""The check registry is the one list of checks: every check id is made by one registered function
in one module, every id a rule of compat.toml, a command's set or docs/architecture.md names exists,
and every command's set comes from the registry. Mirrors the contradiction that was: explain and
doctor each built env.torch_cuda_home their own way, and said opposite things about one host.
Pure unit checks over the package's source and the registry (no processes)."""

import ast
import re
from pathlib import Path

import pytest

from cudaswitch.audit import imageaudit, imagecheck, inventory, policy  # noqa: F401  (they register audit's checks)
from cudaswitch.verify import checkset, facttables as facts, checkregistry

PACKAGE = Path(__file__).resolve().parent.parent / "cudaswitch"
DOCS = PACKAGE.parent / "docs" / "architecture.md"
CHECK_ID = re.compile(r"^[a-z_]+\.[a-z_]+$")


def string_constants(path):
    """Every string constant in a module's code (docstrings left out: they describe, they make nothing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings]


def made_ids():
    """{check id: modules} for every literal first argument of a `check(...)` call in the package."""
    made = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                made.setdefault(node.args[0].value, set()).add(module_of(path))
    return made


def module_of(path):
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_every_check_made_is_registered_by_a_function_of_its_module():
    made = made_ids()
    assert len(made) > 50  # the scan sees the checks at all
    unregistered = sorted(set(made) - set(checkregistry.BY_ID))
    assert unregistered == []
    for check_id, modules in made.items():
        assert modules == {checkregistry.BY_ID[check_id].function.__module__}, check_id


def test_no_check_id_string_appears_in_two_modules():
    """A check id is written in one module of the package only (the one that makes it): no command
    filters or picks checks by naming their ids."""
    where = {}
    for path in PACKAGE.rglob("*.py"):
        for value in set(string_constants(path)):
            if value in checkregistry.BY_ID:
                where.setdefault(value, set()).add(module_of(path))
    assert {i: sorted(m) for i, m in where.items() if len(m) > 1} == {}
    assert set(where) == set(checkregistry.BY_ID)  # and every registered id is written where it is made


def test_an_id_registered_twice_stops_the_import():
    owner = checkregistry.BY_ID["toolkit.status"]
    with pytest.raises(ValueError, match="registered by"):
        checkregistry.registered("toolkit.status", layer="toolkit", shown_by=("verify",))(lambda host, ask: [])
    assert checkregistry.BY_ID["toolkit.status"] is owner
    with pytest.raises(ValueError, match="layer"):
        checkregistry.registered("toolkit.other", layer="kitchen", shown_by=("verify",))
    with pytest.raises(ValueError, match="commands"):
        checkregistry.registered("toolkit.other", layer="toolkit", shown_by=("frobnicate",))


def test_every_rule_names_registered_checks_explain_shows():
    rules = facts.load()["error"]
    named = {check_id for rule in rules for check_id in rule["checks"]}
    assert named <= checkregistry.ids_for("explain")
    assert all(CHECK_ID.match(check_id) for check_id in named)  # no third vocabulary (torch_driver)
    facts.check_rule_ids(rules, checkregistry.ids_for("explain"))  # what the loader applies


def test_each_command_set_comes_from_the_registry():
    for command in ("use", "verify", "doctor", "explain"):
        entries = checkset.entries(command)
        assert entries and all(command in e.commands for e in entries), command
        assert {e for e in checkregistry.ENTRIES if command in e.commands} == set(entries)
    assert [e.layer for e in checkset.entries("doctor")] == sorted(
        (e.layer for e in checkset.entries("doctor")), key=checkregistry.LAYER_KEYS.index)
    for command in ("audit", "image", "torch"):
        assert checkregistry.entries_for(command), command
    # audit --image keeps none of the view's driver-layer checks: they are judged again
    assert {"driver.present", "audit.no_exec"} <= imageaudit.rejudged_ids()
    assert "toolkit.broken" not in imageaudit.rejudged_ids()


def test_the_docs_list_the_registry():
    """docs/architecture.md's "Checks and facts" names every registered id, and only those."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Checks and facts"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    named = set(re.findall(r"`([a-z_]+\.[a-z_]+)`", section)) - {"compat.toml", "torch_builds.toml", "sources.toml",
                                                                   "config.toml", "settings.py", "checkregistry.py",
                                                                   "checkset.py", "facttables.py", "hostchecks.py",
                                                                   "messagechecks.py", "pipeline.py", "checks.py"}
    assert named - set(checkregistry.BY_ID) == set()  # every id the docs name exists
    assert set(checkregistry.BY_ID) - named == set()  # and the docs list them all
