"""`cudaswitch install 11.8` from a mirror of NVIDIA's redist archives whose cuda_nvcc archive holds
a real nvcc: CUDA 11.8.0's cuda_nvcc and cuda_cudart 11.8.89 (tests/redist_mirror.py builds them
from Debian's packaging of NVIDIA's 11.8.89 binaries and NVIDIA's cu11 wheels).

What a user on a current distribution checks: the older toolkit installs complete (listed ok, not
incomplete), and after `use` a plain `nvcc k.cu -o k` works although the default gcc (12 on Debian
12) is above CUDA 11.8's limit of gcc 11: nvcc 11.8 ignores NVCC_CCBIN, so the switch hands it the
supported g++-11 through NVCC_PREPEND_FLAGS, and `off` gives the user's own flags back."""

import json
import os
import subprocess

import pytest

from tests import kits, redist_mirror
from tests.conftest import CUDASWITCH
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)
from tests.test_install import KERNEL
from tests.test_install_redist import new_host


def default_gcc_major():
    out = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True, timeout=60).stdout
    return int(out.split(".")[0])


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    kits.require("g++-11")
    base = tmp_path_factory.mktemp("redist11")
    served = redist_mirror.Mirror(redist_mirror.mirror_with_cuda11(base / "mirror"))
    try:
        host = new_host(base)
        proc = host.run("install", "11.8", "--mirror", served.url, "--json", timeout=900)
    finally:
        served.close()
    return host, proc


def test_older_major_with_nvcc_in_its_archives_installs_complete(installed):
    host, proc = installed
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["version"], result["name"]) == ("11.8.0", "11.8.0 (nvcc 11.8.89)")
    assert result["archives"] == {"cuda_nvcc": "11.8.89", "cuda_cudart": "11.8.89"}
    [item] = managed_items(host)
    assert (item["status"], item["problems"], item["version"]) == ("ok", [], "11.8.89")
    said = subprocess.run([result["nvcc"], "--version"], capture_output=True, text=True, timeout=60).stdout
    assert "release 11.8, V11.8.89" in said
    if default_gcc_major() > 11:  # the first compile needed the supported compiler, and says so
        assert "first compile: building a one-kernel program with CUDA 11.8.0 and /usr/bin/g++-11" in proc.stderr


def run_bash(host, script, cwd, **extra):
    env = dict(host.env, PATH="/usr/bin:/bin:" + os.path.dirname(CUDASWITCH), **extra)
    return subprocess.run([kits.require("bash"), "--noprofile", "--norc", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_after_use_plain_nvcc_builds_and_off_restores_the_users_flags(installed, tmp_path):
    host, proc = installed
    root = json.loads(proc.stdout)["root"]
    (tmp_path / "k.cu").write_text(KERNEL)
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'echo "nvcc=$(command -v nvcc)"; echo "flags=$NVCC_PREPEND_FLAGS"\n'
              'nvcc k.cu -o k || exit 8\n'
              'eval "$(cudaswitch off --shell bash)"; echo "after=$NVCC_PREPEND_FLAGS"\n')
    out = run_bash(host, script, tmp_path, NVCC_PREPEND_FLAGS="-O2")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines())
    assert lines["nvcc"] == root + "/bin/nvcc"
    if default_gcc_major() > 11:
        assert lines["flags"] == "-ccbin /usr/bin/g++-11 -O2"
    assert (tmp_path / "k").is_file()
    assert lines["after"] == "-O2"


def test_nvcc_ccbin_that_nvcc_11_ignores_is_an_error_naming_the_flag_that_works(installed, tmp_path):
    """A guide's `export NVCC_CCBIN=g++-11` with CUDA 11.8: nvcc still takes gcc 12 and refuses, so
    verify says so instead of trusting the variable."""
    if default_gcc_major() <= 11:
        pytest.skip("the default gcc is within CUDA 11.8's limit here: nothing to refuse")
    host, _ = installed
    (tmp_path / "k.cu").write_text(KERNEL)
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'nvcc -c k.cu -o k.o 2>/dev/null && echo BUILT-IT\n'
              'cudaswitch verify --json\n')
    out = run_bash(host, script, tmp_path, NVCC_CCBIN="/usr/bin/g++-11")
    assert not (tmp_path / "k.o").exists() and "BUILT-IT" not in out.stdout
    [gcc] = [c for c in json.loads(out.stdout)["checks"] if c["id"] == "gcc.supported"]
    assert gcc["level"] == "error" and "ignores NVCC_CCBIN=/usr/bin/g++-11" in gcc["message"], gcc
    assert "NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-11'" in gcc["hint"]


@pytest.mark.parametrize("flags", ["-ccbin /usr/bin/g++-11", "--compiler-bindir=/usr/bin/g++-11"])
def test_users_own_ccbin_flag_stands_and_is_not_doubled(installed, tmp_path, flags):
    """A user (or conda's activation) who already passes -ccbin: a second one would make nvcc stop
    with "redefinition of argument 'compiler-bindir'", so the switch leaves the flags alone."""
    host, _ = installed
    (tmp_path / "k.cu").write_text(KERNEL)
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'echo "flags=$NVCC_PREPEND_FLAGS"; nvcc k.cu -o k || exit 8\n'
              'cudaswitch verify --json\n')
    out = run_bash(host, script, tmp_path, NVCC_PREPEND_FLAGS=flags)
    assert out.stdout.splitlines()[0] == "flags=" + flags and (tmp_path / "k").is_file(), out.stderr
    [gcc] = [c for c in json.loads(out.stdout.split("\n", 1)[1])["checks"] if c["id"] == "gcc.supported"]
    assert gcc["level"] == "ok" and gcc["facts"]["compiler"] == "/usr/bin/g++-11", gcc
