"""Bad input to any command: one line on stderr naming what is wrong, a non-zero exit, nothing on
stdout (so an `eval "$(cudaswitch ...)"` runs nothing), and no traceback without --verbose."""

import pytest

BAD = [
    ["bogus"],
    ["list", "--bogus"],
    ["which", "11.8"],
    ["which", "13", "../nvcc"],
    ["global"],
    ["use"],
    ["use", "13", "--shell", "tcsh"],
    ["use", "$(touch x)"],
    ["off", "--shell", "tcsh"],
    ["current", "extra"],
    ["hook-env", "--shell"],
    ["exec", "13.0"],
    ["init", "tcsh"],
    ["local"],
    ["system"],
    ["verify", "11.8"],
    ["doctor", "extra"],
    ["explain"],
    ["install"],
    ["uninstall", "99.9"],
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a))
def test_bad_input_is_one_line_and_non_zero(standard_host, tmp_path, args):
    proc = standard_host.run(*args, cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudaswitch"), proc.stderr


@pytest.mark.parametrize("args", [["--verbose", "which", "11.8"], ["use", "11.8", "--verbose"]])
def test_verbose_shows_the_traceback(standard_host, tmp_path, args):
    proc = standard_host.run(*args, cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "ToolkitNotFound" in proc.stderr
