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


@pytest.fixture
def newest_is_incomplete(host):
    """A partial copy of the newest toolkit beside a complete older one: what a `cp -r` that ran out
    of disk, or a wheel set without nvidia-cuda-nvvm, leaves next to a working install (the 13.x
    wheels are the real toolkits these tests can build; the case is 12.9 incomplete beside 12.5)."""
    older = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    newer = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    for part in ("nvvm/bin/cicc", "bin/fatbinary", "bin/nvlink"):
        (newer / part).unlink()  # a hardlink into the kit cache: the cache stays whole
    return older, newer


def switched_home(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["set"]["CUDA_HOME"]


@pytest.mark.parametrize("request_text", ["13", ">=13.0,<14", "latest"])
def test_a_partial_request_picks_a_toolkit_that_compiles(host, newest_is_incomplete, request_text):
    older, newer = newest_is_incomplete
    proc = host.run("use", request_text, "--shell", "json", "--no-verify")
    assert switched_home(proc) == str(older)
    named = [line for line in proc.stderr.splitlines() if "newer but cannot compile" in line]
    assert len(named) == 1 and "nvvm/bin/cicc" in named[0] and str(newer) in named[0], proc.stderr


def test_a_project_file_asking_for_a_major_gets_the_complete_one(host, newest_is_incomplete, tmp_path):
    older, _ = newest_is_incomplete
    project = tmp_path / "project"
    project.mkdir()
    (project / ".cudaversion").write_text("13\n")
    assert switched_home(host.run("hook-env", "--shell", "json", cwd=project)) == str(older)


def test_an_exact_request_still_gets_what_it_names(host, newest_is_incomplete):
    _, newer = newest_is_incomplete
    proc = host.run("use", "13.1", "--shell", "json")
    assert switched_home(proc) == str(newer) and "cannot compile" in proc.stderr
    strict = host.run("use", "13.1", "--shell", "json", "--strict")
    assert strict.returncode != 0 and strict.stdout == "" and "refusing to switch" in strict.stderr
