"""Answers that stay true after the first one: a remembered GPU build is not carried across a
driver change, and `doctor` exits as `verify` does (1 with an error, 0 otherwise), so a CI step or
a login-node health check can use it."""

import json

import pytest

from tests import kits
from tests.conftest import SCRIPTS
from tests.verify_support import build_libcuda, by_id, report

CLEAN_PATH = SCRIPTS + ":/usr/bin:/bin"  # no toolkit of the machine running the tests


@pytest.fixture
def toolkit(host):
    return kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")


def compile_check(host, toolkit, libcuda):
    env = {"PATH": "%s/bin:%s" % (toolkit, CLEAN_PATH), "CUDA_HOME": str(toolkit), "CUDASWITCH_LIBCUDA": str(libcuda)}
    [check] = by_id(report(host.run("verify", "--json", env=env, timeout=600)), "nvcc.compile")
    return check


def test_a_driver_change_builds_again(host, toolkit, tmp_path):
    """A user upgrades the driver to fix "fails on the GPU": the next verify must run the program on
    the new driver (the stand-ins report an RTX 3090 under drivers for CUDA 13.0 and 13.1), not
    repeat the old verdict; the same driver again is remembered."""
    old = build_libcuda(tmp_path / "r580", 13000, init_rc=0, gpus=["sm_86"])
    new = build_libcuda(tmp_path / "r590", 13010, init_rc=0, gpus=["sm_86"])
    first = compile_check(host, toolkit, old)
    assert first["facts"]["ran"] and "remembered" not in first["message"]
    again = compile_check(host, toolkit, old)
    assert "remembered from an earlier build" in again["message"]
    upgraded = compile_check(host, toolkit, new)
    assert upgraded["facts"]["ran"] and "remembered" not in upgraded["message"], upgraded["message"]


def doctor(host, env):
    proc = host.run("doctor", "--json", env=env, timeout=600)
    levels = {c["level"] for c in json.loads(proc.stdout)["checks"]}
    return proc.returncode, levels


def test_doctor_exit_codes(host, toolkit, tmp_path):
    """Three real states of a workstation: nothing wrong (no GPU, a toolkit, nothing in use), a stale
    LD_LIBRARY_PATH entry left by an old rc file (a warning), and a driver for CUDA 12.4 under a
    CUDA 13.0 toolkit in use (an error)."""
    assert doctor(host, {"PATH": CLEAN_PATH}) == (0, {"ok", "info"})
    code, levels = doctor(host, {"PATH": CLEAN_PATH, "LD_LIBRARY_PATH": "/usr/local/cuda-10.2/lib64"})
    assert (code, "warning" in levels, "error" in levels) == (0, True, False)
    libcuda = build_libcuda(tmp_path / "r550", 12040, init_rc=0, gpus=["sm_86"])
    code, levels = doctor(host, {"PATH": "%s/bin:%s" % (toolkit, CLEAN_PATH), "CUDA_HOME": str(toolkit),
                                 "CUDASWITCH_LIBCUDA": str(libcuda)})
    assert (code, "error" in levels) == (1, True)
