"""A new user's first minutes: the README's first command, run exactly as written, on the
distribution's own python3 (Debian here, which carries PEP 668's EXTERNALLY-MANAGED marker) with
a clean HOME, both in a bare login shell and with someone else's venv active."""

import os
import subprocess
from pathlib import Path

import pytest

from tests import kits

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"
STOCK_PATH = "/usr/bin:/bin"  # a fresh account's PATH, without this machine's pyenv shims


def first_command(readme: Path = REPO / "README.md") -> str:
    """The first command line of the README's first ```sh block (the one a new user pastes)."""
    lines = readme.read_text().splitlines()
    start = lines.index("```sh") + 1
    for line in lines[start:lines.index("```", start)]:
        if line.strip() and not line.lstrip().startswith("#"):
            return line
    raise AssertionError("README's first ```sh block has no command")


def _externally_managed_marker() -> Path:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        kits.require(SYSTEM_PYTHON)  # fails under CI=true, skips elsewhere
    stdlib = subprocess.run([SYSTEM_PYTHON, "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                            capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    return Path(stdlib) / "EXTERNALLY-MANAGED"


def _clean_env(home: Path, path: str = STOCK_PATH, **extra) -> dict:
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", "USER": "tester", **extra}


def test_plain_pip_install_is_refused_by_this_python3(tmp_path):
    """The premise: the old first command fails here, as on any fresh Debian 12 / Ubuntu 24.04."""
    marker = _externally_managed_marker()
    if not marker.exists():
        pytest.skip("%s carries no PEP 668 marker on this machine" % SYSTEM_PYTHON)
    proc = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "--dry-run", "--no-deps", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=_clean_env(tmp_path))
    assert proc.returncode != 0 and "externally-managed-environment" in proc.stderr + proc.stdout


@pytest.mark.parametrize("venv_active", [False, True], ids=["login-shell", "inside-a-venv"])
def test_readme_first_command_installs_and_lists(tmp_path, venv_active):
    marker = _externally_managed_marker()
    assert marker.exists(), "%s should be externally managed (PEP 668) for this test to mean anything" % marker
    kits.require("pipx")
    kits.require("bash")
    home = tmp_path / "home"
    home.mkdir()
    env = _clean_env(home)
    if venv_active:  # a user who installs from inside some project's venv
        venv = tmp_path / "project-venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        env = _clean_env(home, path="%s/bin:%s" % (venv, STOCK_PATH), VIRTUAL_ENV=str(venv))
    command = first_command()
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", command], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, "`%s` failed (%d):\n%s\n%s" % (command, proc.returncode, proc.stdout, proc.stderr)
    # `cudaswitch list` ran: the table's header, or the one line saying nothing was found
    assert "VERSION" in proc.stdout or "no CUDA toolkits found" in proc.stderr, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # ... and it was the copy the command installed, in a venv of its own on the system python3
    program = home / ".local" / "bin" / "cudaswitch"
    assert program.exists() and str(program.resolve()).startswith(str(home / ".local" / "pipx"))
    pyvenv = (program.resolve().parent.parent / "pyvenv.cfg").read_text()
    assert "home = /usr/bin" in pyvenv
    # a new shell of that user finds it by name (what `ensurepath` promised)
    again = subprocess.run(["bash", "-l", "-c", "cudaswitch list --json"], cwd=home, env=_clean_env(home),
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert again.stdout.lstrip().startswith("[")


def test_first_command_is_parsed_from_the_readme():
    command = first_command()
    assert command.startswith("pipx install .") and "cudaswitch list" in command
