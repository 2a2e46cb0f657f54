"""The import budget of the hot path (the budgets in the README): `use`, `off`, `hook-env`,
`current` and `list` run from fastpath.py with warm caches and must not import typer/click/rich
(≈66 ms), json (≈7 ms with re and enum; allowed only where JSON output is not rendered ahead),
packaging, platformdirs, dataclasses (pulls in inspect), subprocess or tomllib. This guards
imports, not wall time: bench/ measures time. Each case runs the real fast path in a fresh
interpreter against the standard host, once to warm the caches and once to record sys.modules,
and checks the command really did its job."""

import json
import subprocess
import sys

import pytest

HEAVY = ("typer", "click", "rich", "json", "packaging", "platformdirs", "dataclasses", "subprocess", "tomllib",
         "tomli")
RUNNER = r"""
import sys
record, args = sys.argv[1], sys.argv[2:]
sys.argv = ["cudaswitch"] + args
from cudaswitch.cli.main import main
code = main()
with open(record, "w") as handle:
    handle.write("\n".join(sorted(sys.modules)))
sys.exit(code)
"""


def fast_run(host, tmp_path, args, env=None, cwd=None):
    """(stdout, modules imported) of the second of two runs of `cudaswitch ARGS` on the fast path."""
    record = tmp_path / "modules.txt"
    for _ in range(2):  # the first run fills the registry and verdict caches, as a user's first use does
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(record), *args], capture_output=True,
                              text=True, env={**host.env, **(env or {})}, cwd=cwd or tmp_path, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, "cudaswitch %s failed: %s" % (" ".join(args), proc.stderr)
    return proc.stdout, set(record.read_text().split("\n"))


def heavy_in(modules):
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """Modules this interpreter has before cudaswitch runs: a heavy one here would hide a regression."""
    out = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, timeout=60).stdout
    already = heavy_in(out.split())
    assert not already, "this interpreter imports %s at startup (a .pth file?): use a clean venv" % already
    return set(out.split())


@pytest.fixture
def project(tmp_path):
    """A project pinned to 13.1, entered from a subdirectory as people do."""
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / ".cudaversion").write_text("# pinned for the test\n13.1\n")
    return tmp_path / "proj" / "src"


def test_use_imports_nothing_heavy(standard_host, tmp_path, baseline):
    out, modules = fast_run(standard_host, tmp_path, ["use", "13.1", "--shell", "bash"])
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in out
    assert "cudaswitch.registry.discover" in modules and heavy_in(modules) == []


def test_off_imports_nothing_heavy(standard_host, tmp_path, baseline):
    switched = subprocess.run(["cudaswitch", "use", "13.1", "--shell", "json"], capture_output=True, text=True,
                              env=standard_host.env, timeout=300, check=True).stdout
    out, modules = fast_run(standard_host, tmp_path, ["off", "--shell", "bash"], env=json.loads(switched)["set"])
    assert "unset CUDA_HOME\n" in out and "unset CUDASWITCH_STATE\n" in out
    assert "cudaswitch.switch.envdiff" in modules and heavy_in(modules) == []


def test_hook_env_entering_a_project_imports_nothing_heavy(standard_host, tmp_path, project, baseline):
    out, modules = fast_run(standard_host, tmp_path, ["hook-env", "--shell", "bash"], cwd=project)
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in out
    assert "cudaswitch.switch.projectfile" in modules and heavy_in(modules) == []


def test_current_imports_nothing_heavy(standard_host, tmp_path, project, baseline):
    out, modules = fast_run(standard_host, tmp_path, ["current"], cwd=project)
    assert "asks for 13.1: 13.1." in out and str(project.parent / ".cudaversion") in out
    assert heavy_in(modules) == []


def test_list_table_imports_nothing_heavy(standard_host, tmp_path, baseline):
    out, modules = fast_run(standard_host, tmp_path, ["list"])
    assert str(standard_host.path("/usr/local/cuda-13.1")) in out and "VERSION" in out
    assert heavy_in(modules) == []


def test_warm_list_json_imports_nothing_heavy_not_even_json(standard_host, tmp_path, baseline):
    """Piped with a warm cache, `list --json` writes the text discovery rendered (json: ~7 ms)."""
    out, modules = fast_run(standard_host, tmp_path, ["list", "--json"])
    roots = {item["root"] for item in json.loads(out)}
    assert str(standard_host.path("/usr/local/cuda-13.1")) in roots
    assert heavy_in(modules) == []
