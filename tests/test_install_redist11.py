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
        # NVCC_CCBIN exported as Arch's /etc/profile.d/cuda.sh does (for its own CUDA): nvcc 11.8
        # does not read it, so the install must still pick g++-11 for its first compile
        proc = host.run("install", "11.8", "--mirror", served.url, "--json", timeout=900,
                        env={"NVCC_CCBIN": kits.require("g++")})
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


def test_an_nvcc_ccbin_set_for_another_cuda_does_not_stop_the_switch_to_11_8(installed, tmp_path):
    """NVCC_CCBIN exported for another toolkit (Arch's profile.d, a guide's line for 12.x): nvcc
    11.8 does not read it, so it picks nothing for 11.8; `use` passes -ccbin g++-11 itself, plain
    nvcc builds, and verify names the compiler the switch chose."""
    if default_gcc_major() <= 11:
        pytest.skip("the default gcc is within CUDA 11.8's limit here: no compiler to choose")
    host, _ = installed
    (tmp_path / "k.cu").write_text(KERNEL)
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'nvcc -c k.cu -o k.o || exit 8\n'
              'cudaswitch verify --json\n')
    out = run_bash(host, script, tmp_path, NVCC_CCBIN="/usr/bin/g++-12")
    assert (tmp_path / "k.o").is_file(), out.stderr
    [gcc] = [c for c in json.loads(out.stdout)["checks"] if c["id"] == "gcc.supported"]
    assert gcc["level"] == "ok" and gcc["facts"]["compiler"] == "/usr/bin/g++-11", gcc
    assert gcc["facts"]["chosen"]["NVCC_PREPEND_FLAGS"].startswith("-ccbin /usr/bin/g++-11"), gcc


def test_the_verdict_on_an_ignored_nvcc_ccbin_names_the_flag_that_works():
    """The facts of an 11.8 shell where no supported compiler could be chosen and NVCC_CCBIN (which
    that nvcc ignores) names g++-11: the error must not blame only the missing gcc-11."""
    from cudaswitch.verify import pipeline

    verdict = pipeline.gcc_verdict(11, "include/crt/host_config.h", "/usr/bin/gcc", "12.2.0", "11.8",
                                 ignored="/usr/bin/g++-11")
    assert verdict["level"] == "error" and "ignores NVCC_CCBIN=/usr/bin/g++-11" in verdict["message"]
    assert "NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-11'" in verdict["hint"]


def test_off_after_a_build_script_appended_to_the_flags_leaves_no_cudaswitch_ccbin(installed, tmp_path):
    """RAPIDS-style build scripts do `export NVCC_PREPEND_FLAGS="$NVCC_PREPEND_FLAGS ..."` inside
    the switched shell: `off` keeps their words but not the switch's -ccbin, which would otherwise
    pin every later toolkit to g++-11 (nvcc takes the last -ccbin)."""
    host, _ = installed
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'export NVCC_PREPEND_FLAGS="$NVCC_PREPEND_FLAGS -lineinfo"\n'
              'eval "$(cudaswitch off --shell bash)"; echo "after=$NVCC_PREPEND_FLAGS"\n')
    out = run_bash(host, script, tmp_path, NVCC_PREPEND_FLAGS="-O2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "after=-O2 -lineinfo"


@pytest.mark.parametrize("flags", ["-ccbin /usr/bin/g++-11", "--compiler-bindir=/usr/bin/g++-11"])
def test_users_own_ccbin_flag_stands_and_is_not_overridden(installed, tmp_path, flags):
    """A user (or conda's activation) who already passes -ccbin picked the compiler: the switch
    adds none (nvcc would take the last -ccbin, with an "incompatible redefinition" warning when
    they differ: seen with 11.8) and judges theirs."""
    host, _ = installed
    (tmp_path / "k.cu").write_text(KERNEL)
    script = ('eval "$(cudaswitch use managed:11.8 --shell bash)" || exit 9\n'
              'echo "flags=$NVCC_PREPEND_FLAGS"; nvcc k.cu -o k || exit 8\n'
              'cudaswitch verify --json\n')
    out = run_bash(host, script, tmp_path, NVCC_PREPEND_FLAGS=flags)
    assert out.stdout.splitlines()[0] == "flags=" + flags and (tmp_path / "k").is_file(), out.stderr
    [gcc] = [c for c in json.loads(out.stdout.split("\n", 1)[1])["checks"] if c["id"] == "gcc.supported"]
    assert gcc["level"] == "ok" and gcc["facts"]["compiler"] == "/usr/bin/g++-11", gcc


def test_the_compiler_judged_is_the_last_ccbin_nvcc_sees():
    """nvcc reads NVCC_PREPEND_FLAGS, its command line, then NVCC_APPEND_FLAGS, and the last -ccbin
    wins (seen with 11.8 and 13.0): a build script appending its own -ccbin changes the compiler."""
    from cudaswitch.switch import plan

    env = {"NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/g++-11 -O2 --compiler-bindir=/opt/c/bin/c++",
           "NVCC_APPEND_FLAGS": "-lineinfo"}
    assert plan.ccbin_in_flags(env) == "/opt/c/bin/c++"
    assert plan.ccbin_in_flags(dict(env, NVCC_APPEND_FLAGS="-ccbin /usr/bin/g++-10")) == "/usr/bin/g++-10"
