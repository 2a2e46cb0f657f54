"""`use --strict` refuses an error verdict
(nothing on stdout, exit 1), `use --no-verify` starts no probe, and doctor's warning when nvcc on
PATH, CUDA_HOME and the libcudart the process mapped belong to three different toolkits."""

import json
import os

import pytest

from tests import kits
from tests.verify_support import CU124_TORCH, build_libcuda, by_id, report, venv_with_torch_package


@pytest.fixture
def old_driver_host(host, tmp_path):
    """13.1 under ROOT with a real stand-in libcuda of a 12.8-era driver (CUDA 12.8 cannot run 13.x:
    minor-version compatibility holds only within a major), probes logged."""
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    log = tmp_path / "probes.log"
    host.env.update(CUDASWITCH_LIBCUDA=str(build_libcuda(tmp_path / "drv", 12080)), CUDASWITCH_PROBE_LOG=str(log))
    return host, log


def test_strict_refuses_an_error_verdict_with_nothing_on_stdout(old_driver_host):
    host, _ = old_driver_host
    plain = host.run("use", "13.1", "--shell", "bash")
    assert plain.returncode == 0 and "export CUDA_HOME=" in plain.stdout  # without --strict: switch, and say it
    [verdict] = plain.stderr.splitlines()
    assert "12.8" in verdict, verdict
    strict = host.run("use", "13.1", "--shell", "bash", "--strict")
    assert strict.returncode == 1 and strict.stdout == ""
    [line] = strict.stderr.splitlines()
    assert line.startswith("cudaswitch: error: refusing to switch (--strict)") and "12.8" in line


def test_no_verify_switches_without_any_probe(old_driver_host):
    host, log = old_driver_host
    proc = host.run("use", "13.1", "--shell", "json", "--no-verify", "--strict")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["set"]["CUDA_HOME"] == str(host.path("/usr/local/cuda-13.1"))
    assert "not verified (--no-verify)" in proc.stderr
    assert not log.exists() or log.read_text().split() == []  # no driver probe, no torch probe


# A stand-in torch that maps the first libcudart.so.12 on the loader path, as a torch built against
# a system CUDA (no nvidia-cuda-runtime wheel) does when it is imported.
TORCH_LOADING_CUDART = '''
import ctypes
ctypes.CDLL("libcudart.so.12")''' + CU124_TORCH


def test_doctor_warns_when_nvcc_cuda_home_and_libcudart_are_three_toolkits(host, tmp_path):
    """Mirrors an rc file that puts /usr/local/cuda-13.0/bin on PATH, a module that set CUDA_HOME to
    13.1, and an old LD_LIBRARY_PATH to 12.4's libraries."""
    roots = {v: kits.install_classic(kits.cuda13(v), host.path("/usr/local/cuda-" + v), v) for v in ("13.0", "13.1")}
    roots["12.4"] = kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    python = venv_with_torch_package(tmp_path, "venv", {"__init__.py": TORCH_LOADING_CUDART})
    env = {"PATH": "%s/bin:%s" % (roots["13.0"], host.env["PATH"]), "CUDA_HOME": str(roots["13.1"]),
           "LD_LIBRARY_PATH": "%s/lib64" % roots["12.4"]}
    [check] = by_id(report(host.run("doctor", "--json", "--python", python, env=env)), "env.one_toolkit")
    assert check["level"] == "warning" and check["message"].startswith("3 different toolkits are in use")
    places = {k: os.path.realpath(v) for k, v in check["facts"]["places"].items()}
    assert places == {"nvcc on PATH": os.path.realpath(roots["13.0"]), "CUDA_HOME": os.path.realpath(roots["13.1"]),
                      "libcudart loaded by torch": os.path.realpath(roots["12.4"])}

    agreeing = dict(env, CUDA_HOME=str(roots["13.0"]), LD_LIBRARY_PATH="%s/lib64" % roots["13.0"])
    python13 = venv_with_torch_package(tmp_path, "venv13",
                                       {"__init__.py": TORCH_LOADING_CUDART.replace(".so.12", ".so.13")})
    [ok] = by_id(report(host.run("doctor", "--json", "--python", python13, env=agreeing)), "env.one_toolkit")
    assert ok["level"] == "ok" and len(ok["facts"]["places"]) == 3
