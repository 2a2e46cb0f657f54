"""torch's own warnings stay in the probe child: the real torch 2.13 CPU build without NumPy
prints "UserWarning: Failed to initialize NumPy" on import, and `verify`, `doctor`, `torch` and
`use` with that Python first on PATH show none of it on stderr (the probe's output is framed and
its stderr kept), while they still report the torch they found."""

import pytest

from tests import verify_support

COMMANDS = (["verify", "13.0"], ["doctor"], ["torch"], ["use", "13.0", "--shell", "bash"])


@pytest.fixture(scope="module")
def torch_python():
    venv = verify_support.torch_venv()
    return str(venv / "bin" / "python"), str(venv / "bin")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_no_numpy_warning_reaches_stderr(standard_host, torch_python, args):
    python, bindir = torch_python
    env = {"PATH": bindir + ":" + standard_host.env["PATH"]}
    extra = ["--python", python] if args[0] in ("verify", "doctor", "torch") else []
    proc = standard_host.run(*args, *extra, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    assert "NumPy" not in proc.stderr and "UserWarning" not in proc.stderr, proc.stderr
    if args[0] != "use":
        assert "2.13" in proc.stdout  # the torch was found and read, warning or not
