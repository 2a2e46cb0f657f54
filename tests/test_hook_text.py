"""The hooks' file names, rules, read size and exported variables come from projectfile's and
envdiff's data (filled in by `init`), so the shell's "did anything change" test cannot drift from
what hook-env reads; each generated hook parses in its own shell."""

import subprocess

import pytest

from cudaswitch.switch import projectfile
from cudaswitch.switch import shells
from tests.shellrun import shell_path
from cudaswitch import envstate

CHECK = {"bash": ["-n"], "zsh": ["-n"], "fish": ["--no-execute"]}


@pytest.mark.parametrize("shell", shells.SHELLS)
def test_generated_hook_names_every_project_file_and_parses(shell, tmp_path):
    text = shells.shell(shell).hook("/opt/cudaswitch's bin/cudaswitch")
    assert "@" + "FILES@" not in text and "@" + "RULES@" not in text and "@" + "READ_BYTES@" not in text
    for name, word, _ in projectfile.HOOK_RULES:
        assert "/%s" % name in text and ("*%s*" % word in text if word else True)
    assert str(projectfile.MAX_BYTES + 1) in text
    if shell != "fish":
        assert all(v in text for v in envstate.SCALARS + envstate.LISTS)
    path = tmp_path / ("hook." + shell)
    path.write_text(text)
    proc = subprocess.run([shell_path(shell)] + CHECK[shell] + [str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_a_new_project_file_name_reaches_the_hook(monkeypatch):
    monkeypatch.setattr(projectfile, "HOOK_RULES", projectfile.HOOK_RULES + ((".cuda-version", "", True),))
    assert '"$dir/.cuda-version"' in shells.shell("bash").hook() and "*/.cuda-version)" in shells.shell("bash").hook()
