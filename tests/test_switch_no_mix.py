"""A switch leaves one toolkit's tools or none, never a mix.

The host mirrors a workstation with CUDA 13.0 installed by NVIDIA's runfile (which links
/usr/local/bin/nvcc to it) and a runtime-only 12.4 beside it: what NVIDIA's 12.x wheels or a
cuda-runtime package install, with ptxas but no nvcc. `use 12.4` must not leave 13.0's nvcc to
answer: after the switch, in real bash, zsh and fish, `command -v nvcc` is 12.4's or a stand-in
that says what is missing, and running it never prints 13.0's version."""

import json
import os

import pytest

from tests import kits, shellrun
from tests.conftest import HOME, SCRIPTS, Host


@pytest.fixture(scope="module")
def mixed_host(tmp_path_factory):
    base = tmp_path_factory.mktemp("mix")
    host = Host(base / "root", base / "work")
    cuda13 = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    general = host.path("/usr/local/bin")
    general.mkdir(parents=True)
    os.symlink(cuda13 / "bin" / "nvcc", general / "nvcc")  # the runfile's link in a general bin dir
    host.env["PATH"] = "%s:%s" % (general, host.env["PATH"])
    host.env["HOME"] = HOME
    return host


def test_use_of_a_toolkit_without_nvcc_leaves_no_other_nvcc(mixed_host):
    for shell in shellrun.SHELLS:
        lines = [shellrun.EVAL_USE[shell].format(cmd="use 12.4"), "command -v nvcc", "nvcc --version",
                 "echo rc=$status" if shell == "fish" else "echo rc=$?",
                 shellrun.EVAL_USE[shell].format(cmd="off"), "command -v nvcc"]
        proc = shellrun.script(shell, lines, mixed_host.env)
        out = proc.stdout.splitlines()
        assert "cuda-13.0" not in out[0] and "release 13.0" not in proc.stdout, (shell, proc.stdout)
        assert "stand-ins" in out[0], (shell, out)
        assert "rc=127" in out and "nvcc is not part of the CUDA toolkit in use" in proc.stderr, (shell, proc.stderr)
        assert out[-1] == str(mixed_host.path("/usr/local/bin/nvcc")), (shell, out)  # off: as it was
        assert "has no nvcc" in proc.stderr and "cudaswitch install 12.4" in proc.stderr, proc.stderr


def test_exec_does_not_run_another_toolkits_nvcc(mixed_host):
    proc = mixed_host.run("exec", "12.4", "--", "nvcc", "--version")
    assert proc.returncode == 127 and "release 13.0" not in proc.stdout, proc.stdout
    assert "nvcc is not part of the CUDA toolkit in use" in proc.stderr
    own = mixed_host.run("exec", "12.4", "--", "ptxas", "--version")  # the tool 12.4 has is its own
    assert own.returncode == 0 and "12.4" in own.stdout, own.stdout


def test_a_complete_toolkit_gets_no_stand_ins(mixed_host):
    proc = mixed_host.run("use", "13.0", "--shell", "json")
    assert proc.returncode == 0 and "stand-ins" not in proc.stdout and "has no" not in proc.stderr


def test_current_and_doctor_read_the_stand_in_as_no_nvcc(mixed_host):
    """After the switch the shell uses 12.4 (CUDA_HOME), not "an unknown toolkit": the stand-in
    is no toolkit, and the 13.0 copies it hides are not a second one in use."""
    lines = ['eval "$(cudaswitch use 12.4 --shell bash)" 2>/dev/null', "cudaswitch current --json",
             "cudaswitch doctor --json"]
    proc = shellrun.script("bash", lines, mixed_host.env, timeout=300)
    current, doctor = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")][:2]
    assert current["version"].startswith("12.4"), current
    levels = {c["id"]: c["level"] for c in doctor["checks"]}
    assert levels["env.several_nvcc"] == "ok" and levels["env.one_toolkit"] == "ok", levels


def test_doctor_names_an_entry_of_another_toolkit(standard_host):
    """nvcc and CUDA_HOME of 13.0, and an LD_LIBRARY_PATH an old rc file left pointing at 13.1's
    lib64: doctor names the 13.1 entry (it used to say "one toolkit in use"); after `use 13.0`
    in bash nothing of 13.1 is left, and doctor says so."""
    cuda13_0, cuda13_1 = standard_host.path("/usr/local/cuda-13.0"), standard_host.path("/usr/local/cuda-13.1")
    env = dict(standard_host.env, PATH="%s/bin:%s:/usr/bin:/bin" % (cuda13_0, SCRIPTS), CUDA_HOME=str(cuda13_0),
               LD_LIBRARY_PATH="%s/lib64" % cuda13_1)
    lines = ["cudaswitch doctor --json", 'eval "$(cudaswitch use 13.0 --shell bash)" 2>/dev/null',
             "cudaswitch doctor --json"]
    proc = shellrun.script("bash", lines, env, timeout=300)
    before, after = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")][:2]
    named = {c["id"]: c for c in before["checks"]}["env.other_toolkit_entries"]
    assert named["level"] == "warning" and "LD_LIBRARY_PATH %s/lib64 (CUDA 13.1" % cuda13_1 in named["message"], named
    assert {c["id"]: c for c in after["checks"]}["env.other_toolkit_entries"]["level"] == "ok"
