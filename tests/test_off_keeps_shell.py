"""`off` never breaks a shell. bash and zsh started without PATH in their environment (`env -u PATH
bash`: cron jobs, `ssh host cmd` with a bare environment, systemd units) keep a default PATH they
do not export; a cudaswitch that only looks at its own environment would put the toolkit's bin
alone on PATH at `use` and unset PATH at `off`, after which not even `ls` runs. The same holds for
any variable a user set without exporting it (CUDA_HOME=/opt/mine in an rc file)."""

import pytest

from tests.conftest import CUDASWITCH
from tests.shellrun import script

SHELLS = ("bash", "zsh")
SHOW_PATH = {"bash": 'echo "PATH=<$PATH>"', "zsh": 'echo "PATH=<$PATH>"'}


def bare_env(host):
    return {k: v for k, v in host.env.items() if k != "PATH"}


def lines_with(prefix, out):
    return [line for line in out.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("through", ["hook-function", "plain-eval"])
def test_use_and_off_in_a_shell_started_without_path_leave_ls_runnable(standard_host, shell, through):
    if through == "hook-function":
        use, off = "cudaswitch use 13.0", "cudaswitch off"
        setup = ['eval "$(%s init %s)"' % (CUDASWITCH, shell)]
    else:
        use = 'eval "$(%s use 13.0 --shell %s)"' % (CUDASWITCH, shell)
        off = 'eval "$(%s off --shell %s)"' % (CUDASWITCH, shell)
        setup = []
    lines = setup + [SHOW_PATH[shell], use, "ls / >/dev/null && echo LS-AFTER-USE", "nvcc --version",
                     off, "ls / >/dev/null && echo LS-AFTER-OFF", SHOW_PATH[shell]]
    proc = script(shell, lines, bare_env(standard_host))
    assert "LS-AFTER-USE" in proc.stdout and "LS-AFTER-OFF" in proc.stdout, proc.stderr
    assert "release 13.0" in proc.stdout
    before, after = lines_with("PATH=<", proc.stdout)
    assert after != "PATH=<>"
    if through == "hook-function":  # the shell's own default comes back exactly
        assert after == before


@pytest.mark.parametrize("shell", SHELLS)
def test_off_gives_back_a_variable_the_shell_had_without_exporting_it(standard_host, shell):
    lines = ['eval "$(%s init %s)"' % (CUDASWITCH, shell), "CUDA_HOME=/opt/mine",
             "cudaswitch use 13.0", 'echo "DURING=<$CUDA_HOME>"', "cudaswitch off", 'echo "AFTER=<$CUDA_HOME>"']
    proc = script(shell, lines, dict(standard_host.env))
    assert lines_with("DURING=<", proc.stdout) == ["DURING=<%s>" % standard_host.path("/usr/local/cuda-13.0")]
    assert lines_with("AFTER=<", proc.stdout) == ["AFTER=</opt/mine>"], proc.stderr
