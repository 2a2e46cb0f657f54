"""Hints that work in the shell that reads them, tried by running them: in real bash, zsh and fish
on a pty with the hook loaded, and in a plain shell without it. And the hook's `cudaswitch`
function hands over the program's output when the user asks for a format (`--shell`)."""

import json
import shutil

import pytest

from tests.conftest import Host
from tests.install_support import drop_installed_trees  # noqa: F401 (autouse fixture)
from tests.shellrun import INIT, SHELLS, Interactive, script

SHOW_HOME = {"bash": 'echo "H=<$CUDA_HOME>"', "zsh": 'echo "H=<$CUDA_HOME>"', "fish": 'echo "H=<$CUDA_HOME>"'}


def shown_home(out):
    return [line for line in out.splitlines() if line.startswith("H=<")][-1][3:-1]


@pytest.mark.parametrize("shell", SHELLS)
def test_explicit_shell_format_is_printed_not_applied(standard_host, tmp_path, shell):
    sh = Interactive(shell, standard_host.env, cwd=str(tmp_path))
    try:
        sh.run(INIT[shell])
        out = sh.run("cudaswitch use 13.1 --shell json")
        home_after = shown_home(sh.run(SHOW_HOME[shell]))
        dotenv = sh.run("cudaswitch use 13.1 --shell=dotenv")
        applied = sh.run("cudaswitch use 13.1; " + SHOW_HOME[shell])  # without --shell it still switches
    finally:
        sh.close()
    payload = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert payload["set"]["CUDA_HOME"] == str(standard_host.path("/usr/local/cuda-13.1"))
    assert home_after == ""  # printed, not evaluated
    assert "CUDA_HOME=" in dotenv
    assert shown_home(applied) == str(standard_host.path("/usr/local/cuda-13.1"))


@pytest.fixture(scope="module")
def managed_host(tmp_path_factory):
    """A host whose only toolkit is one `cudaswitch install 13.0` made."""
    base = tmp_path_factory.mktemp("hints")
    (base / "root").mkdir()
    host = Host(base / "root", base / "work")
    proc = host.run("install", "13.0", timeout=900)
    assert proc.returncode == 0, proc.stderr
    yield host
    shutil.rmtree(base / "work" / "data", ignore_errors=True)


def hint_line(text, start):
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(start))


def test_install_hint_without_the_hook_is_an_eval_that_switches(managed_host):
    proc = script("bash", ["cudaswitch install 13.0"], managed_host.env)
    hint = hint_line(proc.stderr, "use it with:")
    assert hint == 'use it with: eval "$(cudaswitch use managed:13.0)"'
    ran = script("bash", [hint.split(": ", 1)[1], "nvcc --version"], managed_host.env)
    assert "release 13.0" in ran.stdout, ran.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_install_hint_with_the_hook_is_the_plain_command(managed_host, tmp_path, shell):
    sh = Interactive(shell, managed_host.env, cwd=str(tmp_path))
    try:
        sh.run(INIT[shell])
        hint = hint_line(sh.run("cudaswitch install 13.0"), "use it with:")
        assert hint == "use it with: cudaswitch use managed:13.0"
        out = sh.run(hint.split(": ", 1)[1] + "; nvcc --version")
    finally:
        sh.close()
    assert "release 13.0" in out


def test_uninstall_hints_in_a_project_dir_name_the_project_file(managed_host, tmp_path):
    """Active through a project file, `off` would not help: the hint says to change that file,
    and what it says works (after it the toolkit is no longer the one in use)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".cudaversion").write_text("13.0\n")
    sh = Interactive("bash", managed_host.env, cwd=str(tmp_path))
    try:
        sh.run(INIT["bash"])
        sh.run("cd %s" % project)
        refused = sh.run("cudaswitch uninstall 13.0")
    finally:
        sh.close()
    line = hint_line(refused, "cudaswitch: error:")
    assert "name another version in %s" % (project / ".cudaversion") in line
    assert "cudaswitch off" not in line
    assert "or pass --force" in line


def test_uninstall_hint_after_use_without_the_hook(managed_host, tmp_path):
    env_lines = ['eval "$(cudaswitch use managed:13.0)"', "cudaswitch uninstall 13.0"]
    proc = script("bash", env_lines, managed_host.env, cwd=str(tmp_path))
    line = hint_line(proc.stderr, "cudaswitch: error:")
    assert 'run `eval "$(cudaswitch off)"` first, or pass --force' in line


def test_current_in_a_project_without_the_hook_says_how_to_load_it(standard_host, tmp_path):
    (tmp_path / ".cudaversion").write_text("13.1\n")
    proc = script("bash", ["cudaswitch current"], standard_host.env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert 'the hook is not loaded (`eval "$(cudaswitch init bash)"`)' in proc.stdout
    loaded = script("bash", ['eval "$(cudaswitch init bash)"', "__cudaswitch_hook", "cudaswitch current"],
                    standard_host.env, cwd=str(tmp_path))
    assert "project %s" % (tmp_path / ".cudaversion") in loaded.stdout and "not applied" not in loaded.stdout
