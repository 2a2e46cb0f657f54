"""GPU architecture from the driver, always: the real torch 2.14.1+cu130 (compiled for sm_75 ...
sm_120) with a libcuda stand-in reporting one GPU. torch itself cannot start CUDA here (no real
driver: is_available() is False, torch lists no device), which is the case users get burnt by: the
build's own arch flags still say whether the GPU will have a kernel image once the driver works."""

import pytest

from tests import kits
from tests.verify_support import build_libcuda, by_id, report, torch_cuda_venv


@pytest.fixture(scope="module")
def arch_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("arch")
    host = Host(base / "root", base / "work")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    host.python = str(torch_cuda_venv() / "bin" / "python")
    host.drivers = {gpu: build_libcuda(base / gpu, 13010, init_rc=0, gpus=[gpu]) for gpu in ("sm_61", "sm_120")}
    return host


def verify_with(host, gpu):
    proc = host.run("verify", "13.1", "--python", host.python, "--timeout", "300", "--json",
                    env={"CUDASWITCH_LIBCUDA": str(host.drivers[gpu])}, timeout=900)
    return proc, report(proc)


def test_pascal_gpu_is_an_error_naming_the_builds_list_and_a_build_that_has_it(arch_host):
    proc, out = verify_with(arch_host, "sm_61")
    assert out["torch"]["torch"].startswith("2.14.1") and out["torch"]["available"] is False
    assert out["driver"]["gpus"][0]["name"] == "NVIDIA GeForce GTX 1080 Ti"
    [arch] = by_id(out, "torch.gpu_arch")
    assert arch["level"] == "error" and proc.returncode == 1
    assert "sm_61" in arch["message"] and "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120" in arch["message"]
    assert "CUDA 12.6 build has sm_61" in arch["hint"] and "whl/cu126" in arch["hint"]
    [nvcc] = by_id(out, "toolkit.gpu_arch")  # and CUDA 13 cannot compile for it either
    assert nvcc["level"] == "error" and "CUDA 13 dropped sm_61" in nvcc["message"]
    assert "CUDA 12.9 is the newest toolkit" in nvcc["message"] and nvcc["facts"]["source"] == "nvcc --list-gpu-arch"


def test_blackwell_gpu_is_ok_though_torch_cannot_start_cuda(arch_host):
    _, out = verify_with(arch_host, "sm_120")
    assert out["torch"]["available"] is False and out["torch"]["devices"] == []  # torch saw no GPU
    assert out["torch"]["arch_flags"].split()[-1] == "sm_120"  # read from the build itself
    [arch] = by_id(out, "torch.gpu_arch")
    assert arch["level"] == "ok" and "sm_120" in arch["message"]
    [nvcc] = by_id(out, "toolkit.gpu_arch")
    assert nvcc["level"] == "ok"


def test_use_verdict_names_the_arch_problem(arch_host):
    """`use` with that torch first on PATH; torch_timeout set as a user with a slow import would."""
    import os

    config = arch_host.work / "config-arch"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("torch_timeout = 300\n")
    path = os.path.dirname(arch_host.python) + os.pathsep + arch_host.env["PATH"]
    proc = arch_host.run("use", "13.1", "--shell", "bash", "--strict",
                         env={"CUDASWITCH_LIBCUDA": str(arch_host.drivers["sm_61"]), "PATH": path,
                              "CUDASWITCH_CONFIG_DIR": str(config)}, timeout=900)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "sm_61" in proc.stderr
