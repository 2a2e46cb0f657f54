"""the project files besides `.cudaversion`
(`cuda` in asdf/mise's `.tool-versions`, `[tool.cudaswitch] cuda` in pyproject.toml) and the hook's
no-change path, which must start no process at all (a logging `cudaswitch` first on PATH counts)."""

import json
import os

import pytest

from tests.conftest import CUDASWITCH
from tests.shellrun import SHELLS, Interactive
from tests.test_hook import INIT, SHOW, shown_home

PYPROJECT = '[project]\nname = "x"\n\n[tool.cudaswitch]\ncuda = "13.0"\n'


@pytest.fixture
def tree(tmp_path):
    """app/pyproject.toml pins 13.0; app/svc/.tool-versions pins 13.1 (beside python);
    app/svc/py/.tool-versions names no cuda (asdf users pin python only); both/ has a .cudaversion
    (13.0) and a .tool-versions (13.1) in one dir; plainpy/pyproject.toml has no cudaswitch table."""
    (tmp_path / "app" / "svc" / "py").mkdir(parents=True)
    (tmp_path / "app" / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "app" / "svc" / ".tool-versions").write_text("python 3.11.7\ncuda 13.1  # for the kernels\n")
    (tmp_path / "app" / "svc" / "py" / ".tool-versions").write_text("python 3.12.1\n")
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / ".cudaversion").write_text("13.0\n")
    (tmp_path / "both" / ".tool-versions").write_text("cuda 13.1\n")
    (tmp_path / "plainpy").mkdir()
    (tmp_path / "plainpy" / "pyproject.toml").write_text('[project]\nname = "y"\n')
    return tmp_path


@pytest.mark.parametrize("where, file, version", [
    ("app", "app/pyproject.toml", "13.0"),
    ("app/svc", "app/svc/.tool-versions", "13.1"),
    ("app/svc/py", "app/svc/.tool-versions", "13.1"),  # a .tool-versions without cuda is passed over
    ("both", "both/.cudaversion", "13.0"),  # .cudaversion first within one directory
])
def test_current_names_the_project_file_that_decides(standard_host, tree, where, file, version):
    info = json.loads(standard_host.run("current", "--json", cwd=tree / where, check=True).stdout)
    pin = info["pending"][0]  # the hook is not loaded here: the pin is named, not claimed as applied
    assert (pin["kind"], pin["file"]) == ("project", str(tree / file))
    assert pin["root"] == str(standard_host.path("/usr/local/cuda-" + version))
    out = standard_host.run("hook-env", "--shell", "bash", cwd=tree / where, check=True).stdout
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-" + version) in out


def test_pyproject_without_a_cudaswitch_table_is_no_project_file(standard_host, tree):
    no_nvcc = {"PATH": os.path.dirname(CUDASWITCH) + ":/usr/bin:/bin"}  # this machine's PATH may hold one
    info = json.loads(standard_host.run("current", "--json", cwd=tree / "plainpy", env=no_nvcc, check=True).stdout)
    assert info["reason"] == "system" and info["file"] is None and info["pending"] == []


LOGGING_CUDASWITCH = '#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n'


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_starts_no_process_while_nothing_changed(standard_host, tree, shell, tmp_path):
    bindir, log = tmp_path / "logbin", tmp_path / "cudaswitch-runs.log"
    bindir.mkdir()
    (bindir / "cudaswitch").write_text(LOGGING_CUDASWITCH % (log, CUDASWITCH))
    (bindir / "cudaswitch").chmod(0o755)
    env = dict(standard_host.env, PATH=str(bindir) + os.pathsep + standard_host.env["PATH"])
    runs = lambda: log.read_text().splitlines() if log.exists() else []  # noqa: E731
    sh = Interactive(shell, env, cwd=str(tree / "app" / "svc"))
    # init names the real script by absolute path; point the hook at the logging one instead, on
    # the same command line, so the first prompt's run is logged too.
    use_logger = ("set -g __cudaswitch_bin %s" if shell == "fish" else "__cudaswitch_bin=%s") % (bindir / "cudaswitch")
    try:
        if shell == "fish":  # a prompt of our own, to see when the prompt (and so the hook) is done
            sh.run("function fish_prompt; printf '$ '; end")
        sh.run(INIT[shell] + "; " + use_logger)
        assert shown_home(sh.run(SHOW[shell])) == str(standard_host.path("/usr/local/cuda-13.1"))
        applied = len(runs())
        assert applied >= 1 and runs()[-1].startswith("hook-env")  # .tool-versions applied on the first prompt
        for command in ("true", "echo steady", "cd .", "cd py", "cd ..", "ls >/dev/null"):
            sh.run(command)  # py/.tool-versions names no cuda: the same project decides
        assert runs()[applied:] == []
        # The edit lands while the shell is idle at its prompt, as a person's does: the prompt is
        # printed after the hook ran, so the hook never reads the file's metadata before the edit
        # and its content after it (which would be a change of its own, and a second run).
        sh.read_until(b"$ ", timeout=60)
        # Saved as most editors do (a new file renamed over the old).
        (tree / "app" / "svc" / ".tool-versions.new").write_text("python 3.11.7\ncuda 13.0\n")
        os.replace(tree / "app" / "svc" / ".tool-versions.new", tree / "app" / "svc" / ".tool-versions")
        sh.run("true")
        assert shown_home(sh.run(SHOW[shell])) == str(standard_host.path("/usr/local/cuda-13.0"))
        assert [line.split()[0] for line in runs()[applied:]] == ["hook-env"]  # one run for one change
        sh.run("cd %s" % (tree / "app"))
        assert shown_home(sh.run(SHOW[shell])) == str(standard_host.path("/usr/local/cuda-13.0"))
        assert [line.split()[0] for line in runs()[applied:]] == ["hook-env", "hook-env"]  # another file: one more
    finally:
        sh.close()
