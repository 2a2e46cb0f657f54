"""The host compiler is part of the switch.

Two real 13.x trees whose crt/host_config.h ceiling is edited down, so the real nvcc and the real
host gcc 12 produce nvcc's real `#error -- unsupported GNU version!`:
- /usr/local/cuda-13.1 capped at gcc 11 mirrors CUDA 11.4.1-11.8 (ceiling gcc 11) on a host with
  gcc 12: g++-11 is installed (Debian's gcc-11/g++-11 packages, also in .ci/run), so `use` points
  nvcc and CMake at it;
- /usr/local/cuda-13.0 capped at gcc 10 mirrors CUDA 11.1-11.4.0 (ceiling gcc 10): no g++-10 here,
  so it is an error and `use --strict` refuses."""

import os
import re
import shutil
import subprocess

import pytest

from tests import kits
from tests.shellrun import script
from tests.verify_support import by_id, report

TRIPLE_HEADER = "targets/x86_64-linux/include/crt/host_config.h"
KERNEL = "__global__ void k(int *x) { x[threadIdx.x] += 1; }\n"


def gcc_major(program):
    out = subprocess.run([kits.require(program), "-dumpversion"], capture_output=True, text=True, timeout=30).stdout
    return int(out.split(".")[0])


def cap_ceiling(root, ceiling):
    header = kits.detach(root / TRIPLE_HEADER)  # hardlinked from the kit cache: copy before editing
    text = header.read_text()
    edited = re.sub(r"__GNUC__ > 15", "__GNUC__ > %d" % ceiling, text)
    edited = edited.replace("gcc versions later than 15", "gcc versions later than %d" % ceiling)
    assert edited != text
    header.write_text(edited)


@pytest.fixture(scope="module")
def gcc_host(tmp_path_factory):
    from tests.conftest import Host

    assert gcc_major("gcc") >= 12, "these cases mirror a host gcc above 11"
    assert gcc_major("g++-11") == 11
    assert not shutil.which("g++-10") and not os.path.exists("/usr/bin/g++-10"), "the error case needs no g++-10"
    base = tmp_path_factory.mktemp("gcc")
    host = Host(base / "root", base / "work")
    cap_ceiling(kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1"), 11)
    cap_ceiling(kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0"), 10)
    return host


def test_gcc_above_ceiling_with_no_supported_compiler_is_an_error(gcc_host):
    proc = gcc_host.run("verify", "13.0", "--json", timeout=300)
    out = report(proc)
    [item] = by_id(out, "gcc.supported")
    assert item["level"] == "error" and proc.returncode == 1
    assert item["facts"]["gcc"] in item["message"] and "gcc 10 at most" in item["message"]
    assert item["facts"]["ceiling_from"].endswith("host_config.h")
    [build] = by_id(out, "nvcc.compile")  # and the real build says nvcc's own words
    assert build["level"] == "error"
    assert "#error -- unsupported GNU version! gcc versions later than 10 are not supported!" in build["message"]
    assert "-allow-unsupported-compiler" not in build["facts"]["command"]


def test_strict_refuses_a_compiler_nvcc_refuses(gcc_host):
    proc = gcc_host.run("use", "13.0", "--shell", "bash", "--strict", timeout=300)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "refusing to switch (--strict)" in proc.stderr and "gcc 10 at most" in proc.stderr


def test_use_points_nvcc_and_cmake_at_gxx_11_and_off_restores(gcc_host, tmp_path):
    """Acceptance: in a real bash, nvcc -c of a kernel builds and CMake configures a CUDA project."""
    root = gcc_host.path("/usr/local/cuda-13.1")
    gxx11 = shutil.which("g++-11")
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\n"
                                                      "project(x LANGUAGES CUDA)\n")
    kits.require("cmake")
    lines = [
        "set -u",
        "%s/bin/nvcc -c k.cu -o plain.o 2>plain.err; echo plain=$?" % root,  # without the switch: refused
        'eval "$(cudaswitch use 13.1 --shell bash)"',
        'echo "ccbin=$NVCC_CCBIN hostcxx=$CUDAHOSTCXX"',
        "nvcc -c k.cu -o k.o && echo BUILT",
        "cmake -S proj -B build >cmake.log 2>&1 && echo CONFIGURED",
        'eval "$(cudaswitch off --shell bash)"',
        'echo "after=${NVCC_CCBIN-unset},${CUDAHOSTCXX-unset}"',
    ]
    proc = script("bash", lines, gcc_host.env, timeout=600, cwd=tmp_path)
    out = proc.stdout.splitlines()
    assert "plain=1" in out and "unsupported GNU version" in (tmp_path / "plain.err").read_text()
    assert "ccbin=%s hostcxx=%s" % (gxx11, gxx11) in out, proc.stdout + proc.stderr
    assert "BUILT" in out and (tmp_path / "k.o").stat().st_size > 0, proc.stderr
    cmake_log = (tmp_path / "cmake.log").read_text()
    assert "CONFIGURED" in out, cmake_log[-3000:]
    [detected] = (tmp_path / "build" / "CMakeFiles").glob("*/CMakeCUDACompiler.cmake")
    assert 'set(CMAKE_CUDA_HOST_COMPILER "%s")' % gxx11 in detected.read_text()
    assert "after=unset,unset" in out
    [verdict] = [l for l in proc.stderr.splitlines() if l.startswith("cudaswitch: CUDA 13.1")]
    assert ": ok (" in verdict and "host compiler g++-11" in verdict, proc.stderr


def test_a_compiler_the_user_chose_is_kept_and_judged(gcc_host):
    """NVCC_CCBIN set by the user (an rc file, a module) is theirs: not replaced, but an error when
    the toolkit refuses it."""
    gxx12 = kits.require("g++-12")
    proc = gcc_host.run("use", "13.1", "--shell", "json", env={"NVCC_CCBIN": gxx12}, timeout=300)
    assert proc.returncode == 0
    assert "NVCC_CCBIN" not in proc.stdout
    assert "error" in proc.stderr and "gcc 11 at most" in proc.stderr


def test_a_hanging_host_compiler_is_cut_with_its_children(gcc_host, tmp_path):
    """Mirrors NVCC_CCBIN pointing at a compiler wrapper (ccache, a module shim) stuck on a dead
    mount: the wrapper's own child must die too, or it holds the output pipe open for ever; and
    no build is tried with a compiler that cannot even say its version."""
    pidfile = tmp_path / "child.pid"
    wrapper = tmp_path / "gcc-wrapper"
    wrapper.write_text("#!/bin/sh\nsleep 600 &\necho $! > %s\nwait\n" % pidfile)
    wrapper.chmod(0o755)
    proc = gcc_host.run("verify", "13.1", "--json", env={"NVCC_CCBIN": str(wrapper)}, timeout=120)
    out = report(proc)
    [item] = by_id(out, "gcc.supported")
    assert item["level"] == "info" and item["facts"]["compiler"] == str(wrapper) and item["facts"]["gcc"] is None
    assert "cannot check" in item["message"]
    [build] = by_id(out, "nvcc.compile")
    assert build["level"] == "info" and "did not report its version" in build["message"]
    assert not running(int(pidfile.read_text()))


def running(pid):
    """Alive and not a zombie (an orphan killed here waits for a reaper that may be slow)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
