"""the hook in real interactive bash, zsh and fish on a pty, and every
hostile project file refused with one line, nothing on stdout, the environment unchanged."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import CUDASWITCH
from tests.shellrun import INIT, SHELLS, Interactive, script
SHOW = {"bash": 'printf "HOME=<%s>\\n" "$CUDA_HOME"', "zsh": 'printf "HOME=<%s>\\n" "$CUDA_HOME"',
        "fish": 'printf "HOME=<%s>\\n" "$CUDA_HOME"'}
STATUS = {"bash": 'echo "ST=$?"', "zsh": 'echo "ST=$?"', "fish": 'echo "ST=$status"'}


@pytest.fixture
def projects(tmp_path):
    """outer/.cudaversion = 13.0, outer/inner/.cudaversion = 13.1, plain/ without any."""
    (tmp_path / "outer" / "inner").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    (tmp_path / "outer" / ".cudaversion").write_text("# the project's toolkit\n13.0\n")
    (tmp_path / "outer" / "inner" / ".cudaversion").write_text("13.1\n")
    return tmp_path


def shown_home(output):
    lines = [l for l in output.splitlines() if l.startswith("HOME=<")]
    return lines[-1][len("HOME=<"):-1]


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_switches_on_cd_and_restores_on_leaving(standard_host, projects, shell):
    def root(v):
        return str(standard_host.path("/usr/local/cuda-" + v))

    sh = Interactive(shell, standard_host.env, cwd=str(projects / "plain"))
    try:
        sh.run(INIT[shell])
        assert shown_home(sh.run(SHOW[shell])) == ""
        entered = sh.run("cd %s" % (projects / "outer"))
        assert shown_home(sh.run(SHOW[shell])) == root("13.0")
        assert "release 13.0" in sh.run("nvcc --version")
        # Entering a project is a switch: one verdict line, as `use` prints (no driver on this box).
        assert "cudaswitch: CUDA 13.0" in entered, entered
        sh.run("cd inner")
        assert shown_home(sh.run(SHOW[shell])) == root("13.1")
        sh.run("cd %s" % (projects / "plain"))
        assert shown_home(sh.run(SHOW[shell])) == ""
        # Editing the file takes effect at the next prompt.
        sh.run("cd %s" % (projects / "outer"))
        (projects / "outer" / ".cudaversion").write_text("13.1\n")
        sh.run("true")
        assert shown_home(sh.run(SHOW[shell])) == root("13.1")
        # $? survives the hook even on a prompt where hook-env runs.
        assert "ST=3" in sh.run("cd %s; sh -c 'exit 3'" % (projects / "plain") + "\n" + STATUS[shell])
        # An explicit use wins over project files until off.
        sh.run("cudaswitch use 13.0")
        sh.run("cd %s" % (projects / "outer" / "inner"))
        assert shown_home(sh.run(SHOW[shell])) == root("13.0")
        sh.run("cudaswitch off")
        sh.run("true")
        assert shown_home(sh.run(SHOW[shell])) == root("13.1")
    finally:
        sh.close()


@pytest.mark.parametrize("shell", SHELLS)
def test_prompt_survives_missing_or_failing_cudaswitch(standard_host, projects, shell, tmp_path):
    (projects / "outer" / ".cudaversion").write_text("11.8\n")  # no such toolkit: hook-env fails
    # The hook is loaded from a copy of the script, which is then removed: mirrors a
    # `pip uninstall cudaswitch` (or a venv deleted) while shells that loaded the hook stay open.
    program = tmp_path / "venv-bin" / "cudaswitch"
    program.parent.mkdir()
    shutil.copy2(CUDASWITCH, program)
    sh = Interactive(shell, standard_host.env, cwd=str(projects / "plain"))
    try:
        sh.run(INIT[shell].replace("cudaswitch init", "%s init" % program))
        out = sh.run("cd %s" % (projects / "outer"))
        out += sh.run("echo alive")
        assert "alive" in out
        assert sum("cudaswitch: error:" in l and "11.8" in l for l in out.splitlines()) == 1
        program.unlink()
        out = sh.run("cd %s" % (projects / "outer" / "inner"))
        out += sh.run("echo still-alive")
        assert "still-alive" in out
        assert sum(("%s not found" % program) in l for l in out.splitlines()) == 1
    finally:
        sh.close()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_path_rewriting_launcher_does_not_leak_into_the_shell(standard_host, tmp_path, shell):
    """pyenv's shims (and asdf's) put their own dirs first on PATH before running the program; the
    hook runs the real script by absolute path, so `use` then `off` leaves PATH as it was."""
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "cudaswitch").write_text("#!/bin/sh\nPATH=/launcher/libexec:$PATH exec %s \"$@\"\n" % CUDASWITCH)
    (shims / "cudaswitch").chmod(0o755)
    env = {**standard_host.env, "PATH": "%s:%s" % (shims, standard_host.env["PATH"])}
    show_path = 'printf "P=<%s>\\n" "$PATH"' if shell != "fish" else 'printf "P=<%s>\\n" (string join : $PATH)'
    sh = Interactive(shell, env, cwd=str(tmp_path))
    try:
        sh.run(INIT[shell])
        before = [l for l in sh.run(show_path).splitlines() if l.startswith("P=<")][-1]
        assert "release 13.0" in sh.run("cudaswitch use 13.0; nvcc --version")
        during = [l for l in sh.run(show_path).splitlines() if l.startswith("P=<")][-1]
        sh.run("cudaswitch off")
        after = [l for l in sh.run(show_path).splitlines() if l.startswith("P=<")][-1]
    finally:
        sh.close()
    assert "/launcher/libexec" not in during
    assert after == before


HOSTILE = {
    "path": "/usr/local/cuda-13.1\n",
    "dotdot": "../../../usr/local/cuda-13.1\n",
    "command-substitution": "$(touch {canary})\n",
    "backticks": "`touch {canary}`\n",
    "semicolon": "13.0; touch {canary}\n",
    "control-chars": "13.0\x1b]0;pwned\x07\n",
    "nul": "13.0\x00\n",
    "huge": "13.0\n" + "#" * (1 << 20),
    "binary": None,
    "fifo": None,
    "directory": None,
    "unreadable": None,
}


def make_hostile(directory, case, canary):
    path = directory / ".cudaversion"
    if case == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif case == "fifo":  # would block a reader forever
        os.mkfifo(path)
    elif case == "directory":
        path.mkdir()
    elif case == "unreadable":
        path.write_text("13.0\n")
        path.chmod(0)
    else:
        path.write_text(HOSTILE[case].format(canary=canary))


def as_nobody(args, env, work):
    """argv/env running cudaswitch as user nobody from a world-readable copy of the package
    (the installed one may sit under root's 0700 home)."""
    import cudaswitch

    shutil.copytree(os.path.dirname(cudaswitch.__file__), os.path.join(work, "pkg", "cudaswitch"))
    env = {**env, "PYTHONPATH": os.path.join(work, "pkg"), "CUDASWITCH_CACHE_DIR": os.path.join(work, "c")}
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "cudaswitch"]
    return argv + list(args), env


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_project_file_is_refused(standard_host, case):
    """Each mirrors a .cudaversion a stranger's repository could hold."""
    work = tempfile.mkdtemp(prefix="hostile-")
    try:
        os.chmod(work, 0o755)
        project = os.path.join(work, "repo")
        os.mkdir(project)
        canary = os.path.join(work, "canary")
        from pathlib import Path

        make_hostile(Path(project), case, canary)
        env = {**standard_host.env, "CUDA_HOME": "/before"}
        argv = ["cudaswitch", "hook-env", "--shell", "bash"]
        if case == "unreadable":  # root reads anything: ask as an ordinary user
            argv, env = as_nobody(argv[1:], env, work)
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=project, timeout=60)
        assert proc.returncode != 0
        assert proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and ".cudaversion" in proc.stderr, proc.stderr
        assert not os.path.exists(canary)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("name", ["pyproject.toml", ".tool-versions"])
def test_project_file_that_is_a_fifo_never_blocks(standard_host, tmp_path, name):
    """A cloned repository can hold a FIFO (or a link to /dev/tty) where pyproject.toml or
    .tool-versions belongs; a plain open() would hang hook-env and with it every prompt."""
    project = tmp_path / "repo"
    project.mkdir()
    os.mkfifo(project / name)
    proc = subprocess.run(["cudaswitch", "hook-env", "--shell", "bash"], capture_output=True, text=True,
                          env={**standard_host.env, "CUDA_HOME": "/before"}, cwd=project, timeout=30)
    assert proc.stdout == ""
    if name == ".tool-versions":  # asdf's file is refused as data, like .cudaversion
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and name in proc.stderr
    else:  # pyproject.toml is every Python tool's: one that cannot be read selects nothing
        assert proc.returncode == 0 and proc.stderr == ""


def test_refusal_stays_one_inert_line_when_the_directory_name_holds_a_newline(standard_host, tmp_path):
    """git clones any name: a directory with a newline and a terminal title escape in it, holding a
    refused .cudaversion, must still give exactly one line with no raw escape for the terminal."""
    project = tmp_path / "repo\n\x1b]0;pwned\x07"
    project.mkdir()
    (project / ".cudaversion").write_text("/usr/local/cuda-13.1\n")
    proc = subprocess.run(["cudaswitch", "hook-env", "--shell", "bash"], capture_output=True, text=True,
                          env=standard_host.env, cwd=project, timeout=30)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "\x1b" not in proc.stderr and "refusing" in proc.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_hook_survives_errexit_and_an_err_trap(standard_host, projects, shell):
    """Some users run with `set -e` or an ERR trap; the hook's own probing (read hits end of file)
    must neither close the shell nor fire the trap."""
    lines = [INIT[shell], "trap 'echo TRAPPED' ERR", "set -e", "cd outer", "__cudaswitch_hook", SHOW[shell]]
    proc = script(shell, lines, dict(standard_host.env), cwd=projects)
    assert proc.returncode == 0, proc.stderr
    assert "TRAPPED" not in proc.stdout
    assert shown_home(proc.stdout) == str(standard_host.path("/usr/local/cuda-13.0"))
