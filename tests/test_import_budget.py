"""The import budget of the hot path (the budgets in the README): every fast command of the table
runs with warm caches importing only cudaswitch's own modules and a named handful of the standard
library's (os and what it needs, marshal, binascii, ...). Anything else (typer/click/rich ≈66 ms,
typing ≈12 ms with re and collections, json ≈7 ms, subprocess, tomllib, dataclasses, pathlib) is a
regression of every prompt and every `use`; a command that needs more says so in EXTRA.

Each case runs the real fast path with `python -ES` (so no .pth file of the test interpreter
hides an import), against the standard host, once to warm the caches
and once to record sys.modules, and checks the command really did its job. This guards imports,
not wall time: bench/ measures time."""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from cudaswitch.cli import table

REPO = str(Path(__file__).resolve().parent.parent)
# os and what it imports, and built-in C modules that cost nothing to import.
ALLOWED = frozenset(("os", "os.path", "posixpath", "genericpath", "stat", "_stat", "_collections_abc", "marshal",
                     "binascii", "errno", "math", "fcntl"))
# textwrap (with re and its dependencies) renders help pages and nothing else.
HELP_EXTRA = frozenset(("textwrap", "re", "re._casefix", "re._compiler", "re._constants", "re._parser", "_sre",
                        "enum", "types", "functools", "_functools", "collections", "_collections", "operator",
                        "_operator", "keyword", "reprlib", "itertools", "copyreg"))
TYPING = frozenset(("typing", "typing.io", "typing.re", "_typing", "collections.abc", "contextlib", "warnings"))
# Fast commands whose own job needs more, as they are today (a ceiling: growth fails here). init
# runs once per shell start and renders the hook's text with re; audit merge reads JSON reports
# and images (bench/merge.py times it).
AUDIT_MERGE = frozenset("""__future__ _bisect _bz2 _compression _datetime _json _lzma _random _sha512 _socket
    _string _weakrefset array bisect bz2 datetime fnmatch gc glob importlib importlib._bootstrap
    importlib._bootstrap_external importlib.resources importlib.resources._adapters importlib.resources._common
    importlib.resources._legacy importlib.resources.abc ipaddress json json.decoder json.encoder json.scanner lzma
    mmap ntpath _ast ast pathlib random select selectors shutil socket string tempfile tomllib tomllib._parser
    tomllib._re tomllib._types urllib urllib.parse weakref zlib linecache token tokenize traceback""".split())
# torch plans from data tables it keeps parsed in the cache (cudaswitch/cache.py): re, typing and glob
# (verify/checks.py), no tomllib, no child process once its probes are cached.
EXTRA = {"init": HELP_EXTRA | TYPING, "audit merge": HELP_EXTRA | TYPING | AUDIT_MERGE,
         "torch": HELP_EXTRA | TYPING | {"glob", "fnmatch"}}
# Not within the budget: they show or write config.toml's values as TOML through tomli_w (a
# third-party module).
OVER_BUDGET = {"config show", "config set", "config unset"}
# cudaswitch's own imports, without what site and the .pth files of the test interpreter bring
# (they would hide an import): python -ES, with the package and site-packages put on sys.path.
RUNNER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
sys.path.append(sys.argv[2])
record, args = sys.argv[3], sys.argv[4:]
sys.argv = ["cudaswitch"] + args


def save():
    with open(record, "w") as handle:
        handle.write("\n".join(sorted(sys.modules)))


def replaced(*_args):  # exec's handler replaces the process: record what it imported before that
    save()
    os._exit(0)


os.execvpe = replaced
from cudaswitch.cli.main import main
code = main()
save()
sys.exit(code)
"""


def start_modules():
    out = subprocess.run([sys.executable, "-ES", "-c", "import sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return set(out.split())


BASELINE = start_modules()
PURELIB = sysconfig.get_path("purelib")  # typer, tomli_w: found without site


def fast_run(host, tmp_path, args, env=None, cwd=None, stdin=None):
    """(stdout, modules imported beyond the interpreter's own) of the second of two runs."""
    record = tmp_path / "modules.txt"
    for _ in range(2):  # the first run fills the registry and verdict caches, as a user's first use does
        proc = subprocess.run([sys.executable, "-ES", "-c", RUNNER, REPO, PURELIB, str(record), *args],
                              capture_output=True, text=True, env={**host.env, **(env or {})},
                              cwd=cwd or tmp_path, timeout=300, input=stdin)
        assert proc.returncode == 0, "cudaswitch %s failed: %s" % (" ".join(args), proc.stderr)
    return proc.stdout, set(record.read_text().split("\n")) - BASELINE


def outside_budget(modules, command):
    allowed = ALLOWED | EXTRA.get(command, frozenset())
    return sorted(m for m in modules if not m.startswith("cudaswitch") and m not in allowed)


@pytest.fixture
def project(tmp_path):
    """A project pinned to 13.1, entered from a subdirectory as people do."""
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / ".cudaversion").write_text("# pinned for the test\n13.1\n")
    return tmp_path / "proj" / "src"


def switched_env(host):
    out = subprocess.run(["cudaswitch", "use", "13.1", "--shell", "json"], capture_output=True, text=True,
                         env=host.env, timeout=300, check=True).stdout
    return json.loads(out)["set"]


def test_use_imports_nothing_heavy(standard_host, tmp_path):
    out, modules = fast_run(standard_host, tmp_path, ["use", "13.1", "--shell", "bash"])
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in out
    assert "cudaswitch.registry.discover" in modules and outside_budget(modules, "use") == []


def test_off_imports_nothing_heavy(standard_host, tmp_path):
    out, modules = fast_run(standard_host, tmp_path, ["off", "--shell", "bash"], env=switched_env(standard_host))
    assert "unset CUDA_HOME\n" in out and "unset CUDASWITCH_STATE\n" in out
    assert "cudaswitch.switch.envdiff" in modules and outside_budget(modules, "off") == []


def test_hook_env_entering_a_project_imports_nothing_heavy(standard_host, tmp_path, project):
    out, modules = fast_run(standard_host, tmp_path, ["hook-env", "--shell", "bash"], cwd=project)
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in out
    assert "cudaswitch.switch.projectfile" in modules and outside_budget(modules, "hook-env") == []


def test_current_imports_nothing_heavy(standard_host, tmp_path, project):
    out, modules = fast_run(standard_host, tmp_path, ["current"], cwd=project)
    assert "asks for 13.1: 13.1." in out and str(project.parent / ".cudaversion") in out
    assert outside_budget(modules, "current") == []


def test_list_table_imports_nothing_heavy(standard_host, tmp_path):
    out, modules = fast_run(standard_host, tmp_path, ["list"])
    assert str(standard_host.path("/usr/local/cuda-13.1")) in out and "VERSION" in out
    assert outside_budget(modules, "list") == []


def test_warm_list_json_imports_nothing_heavy_not_even_json(standard_host, tmp_path):
    """Piped with a warm cache, `list --json` writes the text discovery rendered (json: ~7 ms)."""
    out, modules = fast_run(standard_host, tmp_path, ["list", "--json"])
    roots = {item["root"] for item in json.loads(out)}
    assert str(standard_host.path("/usr/local/cuda-13.1")) in roots
    assert outside_budget(modules, "list") == []


def _home_env(tmp_path):
    """local and global write files: a private config dir per test."""
    return {"CUDASWITCH_CONFIG_DIR": str(tmp_path / "config")}


# Every other fast command: (argv, what its stdout holds, where it runs).
OTHERS = {
    "which": (["which", "13.1", "nvcc"], "/usr/local/cuda-13.1/bin/nvcc", None),
    "exec": (["exec", "13.1", "--", "true"], "", None),
    "init": (["init", "bash"], "__cudaswitch_hook", None),
    "direnv-use": (["direnv-use", "--", "13.1"], "CUDA_HOME", "envrc"),
    "local": (["local", "13.1"], "", "scratch"),
    # as a script or a user sure of it runs it again: nothing to write, config.toml read from its
    # parsed copy (no tomllib)
    "global": (["global", "13.1"], "", None),
    "config path": (["config", "path"], "config.toml", None),
    "config get": (["config", "get", "probe_timeout"], "5", None),
    "torch": (["torch", "--driver", "550.54", "--gpu", "sm_86"], "pip install", None),
    "audit merge": (["audit", "merge", "--json"], "hosts", None),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_every_other_fast_command_stays_in_the_budget(standard_host, tmp_path, name):
    """What a script or a prompt calls besides use/off/list: the same budget (audit merge may
    read JSON)."""
    args, wanted, where = OTHERS[name]
    cwd = tmp_path / (where or "work")
    cwd.mkdir()
    if where == "envrc":
        (cwd / ".envrc").write_text("use cuda 13.1\n")
    report = subprocess.run(["cudaswitch", "audit", "--json", "--compact"], capture_output=True, text=True,
                            env=standard_host.env, timeout=300).stdout if name == "audit merge" else None
    env = {**_home_env(tmp_path), **({"DIRENV_DIR": "-" + str(cwd)} if where == "envrc" else {})}
    if name == "global":  # set once (tomli_w writes it); fast_run's first run then parses what was written
        subprocess.run(["cudaswitch", *args], env={**standard_host.env, **env}, timeout=300, check=True,
                       capture_output=True)
    out, modules = fast_run(standard_host, tmp_path, args, env=env, cwd=cwd, stdin=report)
    assert wanted in out.replace(str(standard_host.root), ""), out[-500:]
    assert outside_budget(modules, name) == [], (name, outside_budget(modules, name))
    if name == "global":
        assert 'default = "13.1"' in (tmp_path / "config" / "config.toml").read_text()


def test_every_fast_command_has_a_budget_case():
    """A command made fast must be added here: its imports are every caller's cost."""
    covered = {"use", "off", "hook-env", "current", "list"} | set(OTHERS) | OVER_BUDGET
    assert {command.name for command in table.COMMANDS if command.fast} <= covered


def test_the_budget_catches_a_heavy_import(standard_host, tmp_path):
    """The guard can fail: the same run with typing imported on the way is outside the budget."""
    sitecustom = tmp_path / "heavy"
    sitecustom.mkdir()
    (sitecustom / "cudaswitch_heavy.py").write_text("import typing\n")
    record = tmp_path / "modules.txt"
    runner = RUNNER.replace("from cudaswitch.cli.main import main", "import cudaswitch_heavy\n"
                            "from cudaswitch.cli.main import main")
    subprocess.run([sys.executable, "-ES", "-c", "import sys; sys.path.insert(0, %r)\n" % str(sitecustom) + runner,
                    REPO, PURELIB, str(record), "which", "13.1"], env=standard_host.env, cwd=tmp_path, timeout=300,
                   check=True, capture_output=True)
    modules = set(record.read_text().split("\n")) - BASELINE
    assert "typing" in outside_budget(modules, "which")
