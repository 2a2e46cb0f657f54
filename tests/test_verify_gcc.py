"""Acceptance 3: a toolkit whose crt/host_config.h refuses the host gcc.

Mirrors CUDA 11.x (ceiling gcc 11) on a host with gcc 12: a real 13.1 tree whose host_config.h
ceiling is edited from 15 to 11, so the real nvcc and the real host gcc produce the real #error."""

import re

import pytest

from tests import kits
from tests.verify_support import by_id, report

TRIPLE_HEADER = "targets/x86_64-linux/include/crt/host_config.h"


def host_gcc_major():
    import subprocess

    out = subprocess.run([kits.require("gcc"), "-dumpversion"], capture_output=True, text=True, timeout=30).stdout
    return int(out.split(".")[0])


@pytest.fixture(scope="module")
def gcc_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("gcc")
    host = Host(base / "root", base / "work")
    ceiling = host_gcc_major() - 1
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    header = kits.detach(root / TRIPLE_HEADER)  # hardlinked from the kit cache: copy before editing
    text = header.read_text()
    edited = re.sub(r"__GNUC__ > 15", "__GNUC__ > %d" % ceiling, text)
    edited = edited.replace("gcc versions later than 15", "gcc versions later than %d" % ceiling)
    assert edited != text
    header.write_text(edited)
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    host.ceiling = ceiling
    return host


def test_gcc_above_ceiling_is_a_warning_naming_both(gcc_host):
    out = report(gcc_host.run("verify", "13.1", "--json"))
    [item] = by_id(out, "gcc.supported")
    gcc = item["facts"]["gcc"]
    assert item["level"] == "warning"
    assert gcc in item["message"] and "gcc %d at most" % gcc_host.ceiling in item["message"]
    assert "13.1" in item["message"] and item["facts"]["ceiling_from"].endswith("host_config.h")


def test_compile_shows_nvccs_own_error_line(gcc_host):
    proc = gcc_host.run("verify", "13.1", "--compile", "--json", timeout=300)
    [item] = by_id(report(proc), "nvcc.compile")
    assert item["level"] == "error" and proc.returncode == 1
    assert "#error -- unsupported GNU version! gcc versions later than %d are not supported!" % gcc_host.ceiling \
        in item["message"]


def test_compile_of_a_fitting_toolkit_builds(gcc_host):
    proc = gcc_host.run("verify", "13.0", "--compile", timeout=300)
    assert "the one-kernel program builds" in proc.stdout, proc.stdout + proc.stderr
    assert "gcc" in proc.stdout and "within CUDA 13.0's limit (gcc 15)" in proc.stdout


def test_a_hanging_host_compiler_is_cut_with_its_children(gcc_host, tmp_path):
    """Mirrors NVCC_CCBIN pointing at a compiler wrapper (ccache, a module shim) stuck on a dead
    mount: the wrapper's own child must die too, or it holds the output pipe open for ever."""
    import time

    pidfile = tmp_path / "child.pid"
    wrapper = tmp_path / "gcc-wrapper"
    wrapper.write_text("#!/bin/sh\nsleep 600 &\necho $! > %s\nwait\n" % pidfile)
    wrapper.chmod(0o755)
    started = time.monotonic()
    proc = gcc_host.run("verify", "13.0", "--json", env={"NVCC_CCBIN": str(wrapper)}, timeout=120)
    [item] = by_id(report(proc), "gcc.supported")
    assert item["level"] == "info" and item["facts"]["compiler"] == str(wrapper) and item["facts"]["gcc"] is None
    assert time.monotonic() - started < 60
    assert not running(int(pidfile.read_text()))


def running(pid):
    """Alive and not a zombie (an orphan killed here waits for a reaper that may be slow)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
