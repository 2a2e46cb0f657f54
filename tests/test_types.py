"""The type checker runs in the suite: mypy over the package with the configuration pyproject.toml
declares (and says why), and the public functions of registry/, switch/ and verify/ carry
annotations, so mypy checks their bodies and their callers. A maintainer changing a record's shape
or a function's arguments learns here which caller broke, before a user does."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

from tests import kits

TOP = Path(__file__).resolve().parent.parent
PACKAGE = TOP / "cudaswitch"
TYPED_PACKAGES = ("registry", "switch", "verify")

# Temporary: a module whose owner has not annotated it yet (none today). Remove the name once its
# public functions are annotated; the test below fails on any other module, and on a listed one that
# no longer needs to be listed.
NOT_YET_ANNOTATED: frozenset = frozenset()


def _mypy(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        kits._give_up("mypy is not installed: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", "mypy", *args], capture_output=True, text=True, cwd=TOP,
                          timeout=600)


def test_mypy_passes_over_the_package():
    """What a maintainer runs before a commit: `python3 -m mypy cudaswitch`, clean."""
    proc = _mypy("cudaswitch")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_mypy_with_this_configuration_catches_a_wrong_call(tmp_path):
    """The checker is live, not configured into silence: a record read with the wrong type, as a
    caller of the registry might write it, is an error under the same configuration."""
    bad = tmp_path / "wrong_call.py"
    bad.write_text("from cudaswitch.toolkit import Toolkit\n\n\n"
                   "def short_of(tk: Toolkit) -> int:\n    return tk.short\n")
    proc = _mypy("--config-file", str(TOP / "pyproject.toml"), str(bad))
    assert proc.returncode == 1 and "Incompatible return value type" in proc.stdout, proc.stdout + proc.stderr


def _unannotated(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list:
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    if is_method and args and args[0].arg in ("self", "cls"):
        args = args[1:]
    args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
    missing = [a.arg for a in args if a.annotation is None]
    return missing + (["return"] if fn.returns is None else [])


def public_functions_missing_annotations(path: Path) -> list:
    """'name(arg, return)' for each public function or public method of a public class in `path`
    that lacks an annotation."""
    found = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.parse(path.read_text(), str(path)).body:
        members = [(node, False)] if isinstance(node, functions) else []
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            members = [(m, True) for m in node.body if isinstance(m, functions)]
        for fn, is_method in members:
            missing = [] if fn.name.startswith("_") else _unannotated(fn, is_method)
            if missing:
                found.append("%s(%s)" % (fn.name, ", ".join(missing)))
    return found


def test_public_functions_of_registry_switch_verify_are_annotated():
    """Every public function a command calls in registry/, switch/ and verify/ says what it takes
    and returns, so mypy checks it and its callers (apart from the named temporary exceptions)."""
    offenders, listed_but_done = {}, set(NOT_YET_ANNOTATED)
    for package in TYPED_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            name = path.relative_to(PACKAGE).as_posix()
            missing = public_functions_missing_annotations(path)
            if missing:
                listed_but_done.discard(name)
            if missing and name not in NOT_YET_ANNOTATED:
                offenders[name] = missing
    assert not offenders, offenders
    assert not listed_but_done, "annotated now: remove from NOT_YET_ANNOTATED: %s" % sorted(listed_but_done)


def test_the_annotation_scan_sees_a_missing_annotation(tmp_path):
    """The scan itself can fail: a public function without a return annotation is reported, a
    private one is not."""
    sample = tmp_path / "sample.py"
    sample.write_text("def resolve(request: str):\n    pass\n\n\ndef _helper(x):\n    pass\n\n\n"
                      "class Lookup:\n    def active(self, env) -> None:\n        pass\n")
    assert public_functions_missing_annotations(sample) == ["resolve(return)", "active(env)"]


def test_every_function_of_the_package_must_be_annotated(tmp_path):
    """disallow_untyped_defs holds for the whole package: set for all of it, no override turns it
    off for some modules, and a function without annotations is an error under this configuration."""
    try:
        import tomllib
    except ModuleNotFoundError:  # 3.10
        import tomli as tomllib
    conf = tomllib.loads((TOP / "pyproject.toml").read_text())["tool"]["mypy"]
    assert conf.get("disallow_untyped_defs") is True, conf
    loosened = [o["module"] for o in conf.get("overrides", [])
                if o.get("disallow_untyped_defs") is False or o.get("ignore_errors")]
    assert not loosened, loosened
    bad = tmp_path / "untyped.py"
    bad.write_text("def helper(x):\n    return x\n")
    proc = _mypy("--config-file", str(TOP / "pyproject.toml"), str(bad))
    assert proc.returncode == 1 and "[no-untyped-def]" in proc.stdout, proc.stdout + proc.stderr
